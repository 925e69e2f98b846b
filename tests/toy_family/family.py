"""The toy family as the rest of MemLens sees it."""

from __future__ import annotations

from inference.core.capabilities import Capability
from inference.core.family import FamilyDefaults
from inference.core.loaded_model import LoadedModel
from inference.core.trace import Trace, TraceRequest, indexed_axis
from inference.core.tracing import encode_sources, recording, run_record
from tests.toy_family.model import AXIS, CONFIG_NAME, ToySegmentsConfig, ToySegmentsModel


class ToySegmentsFamily(FamilyDefaults):
    name = "toy_segments"
    config_names = (CONFIG_NAME,)
    config_type = ToySegmentsConfig
    title = "Toy segment-recurrent model (tests only)"

    def build(self, config: ToySegmentsConfig) -> ToySegmentsModel:
        return ToySegmentsModel(config)

    def capabilities(self, config: ToySegmentsConfig) -> frozenset[Capability]:
        return frozenset({Capability.SEGMENTS})

    def trace(self, loaded: LoadedModel, request: TraceRequest) -> Trace:
        if request.targets is not None:
            raise ValueError("the toy model reads one text")
        model, tokenizer = loaded.model, loaded.tokenizer
        ids = encode_sources(loaded, request.sources)  # [b, n]
        with recording(model, request.names, request.interventions) as (captures, state_size):
            logits = model(ids, state_size)  # [b, n, vocab]
        length = model.config.segment_length
        tokens, roles = {}, {}
        for segment, start in enumerate(range(0, ids.shape[1], length)):
            rows = ids[:, start : start + length].tolist()
            axis = indexed_axis(AXIS, segment=segment)
            tokens[axis] = [[f"[state{j}]" for j in range(state_size)] + tokenizer.display_tokens(r) for r in rows]
            roles[axis] = [["mem"] * state_size + ["pad" if i == tokenizer.pad_id else "src" for i in r] for r in rows]
        return Trace(
            run=run_record(loaded, request, state_size, None),
            captures=captures,
            tokens=tokens,
            roles=roles,
            sources=request.sources,
            output_ids=[[] for _ in request.sources],
            outputs=["" for _ in request.sources],
            logits=logits.detach().cpu(),
            decoded=False,
        )


FAMILY = ToySegmentsFamily()
