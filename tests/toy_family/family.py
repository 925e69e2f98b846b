"""The toy family as the rest of MemLens sees it."""

from __future__ import annotations

from inference.core.axes import AxisKey, AxisRole
from inference.core.capabilities import Capability
from inference.core.family import FamilyDefaults, LoadedModel
from inference.core.hooks import HookFn
from inference.core.interventions import Intervention
from inference.core.refusals import InputRefused
from inference.core.trace import Role, Trace, TraceRequest
from inference.core.tracing import assembled_trace, encode_sources, recording, token_roles
from tests.toy_family.lesions import RotateState
from tests.toy_family.model import AXIS, FAMILY_NAME, ToyRecord, ToySegmentsConfig, ToySegmentsModel


class ToySegmentsFamily(FamilyDefaults):
    name = FAMILY_NAME
    config_type = ToySegmentsConfig
    title = "Toy segment-recurrent model (tests only)"
    token_axes = {AXIS: AxisRole.SEGMENT}
    lesion_kinds = (RotateState,)
    record_fields = ToyRecord

    def build(self, config: ToySegmentsConfig) -> ToySegmentsModel:
        return ToySegmentsModel(config)

    def capabilities(self, config: ToySegmentsConfig) -> frozenset[Capability]:
        return frozenset({Capability.ATTENTION, Capability.SEGMENTS})

    def intervention_hooks(
        self, model: ToySegmentsModel, intervention: Intervention, memory_size: int
    ) -> list[tuple[str, HookFn]] | None:
        if isinstance(intervention, RotateState):
            return [("carry.enter", intervention.hook())]
        return None

    def trace(self, loaded: LoadedModel, request: TraceRequest) -> Trace:
        if request.targets is not None:
            raise InputRefused("the toy model reads one text")
        model, tokenizer = loaded.model, loaded.tokenizer
        ids = encode_sources(loaded, request.sources)  # [b, n]
        with recording(model, request.names, request.interventions) as (captures, state_size):
            logits = model(ids, state_size)  # [b, n, vocab]
        length = model.config.segment_length
        state_tokens = [f"[state{j}]" for j in range(state_size)]
        tokens, roles = {}, {}
        for segment, start in enumerate(range(0, ids.shape[1], length)):
            rows = ids[:, start : start + length].tolist()
            axis = AxisKey(AXIS, segment=segment)
            tokens[axis] = [state_tokens + tokenizer.display_tokens(row) for row in rows]
            roles[axis] = [[Role.MEM] * state_size + row for row in token_roles(rows, model.config, Role.SRC)]
        return assembled_trace(
            loaded,
            request,
            captures=captures,
            memory_size=state_size,
            tokens=tokens,
            roles=roles,
            output_ids=[[] for _ in request.sources],
            logits=logits,
            decoding=None,
        )


FAMILY = ToySegmentsFamily()
