"""Token axes and roles, typed: a hook point reads its axis declarations once and strictly, a trace is asked
for a per-call axis with its call and for any other axis without one, and the core assembles every family's
Trace with the record of what ran."""

from __future__ import annotations

import copy
import json

import pytest
import torch

from inference.core.axes import AxisKey, AxisPart, TokenAxis
from inference.core.decoding import GREEDY, Decoding
from inference.core.family import LoadedModel, capabilities_of
from inference.core.hooks import HookPoint
from inference.core.interventions import Interventions, MemorySize
from inference.core.trace import MEMORY_ROLES, Role, TraceRequest
from inference.core.tracing import assembled_trace, run_with_trace
from tests.conftest import SOURCES, make_tiny, make_tiny_language_model
from tests.unit.test_recurrent_memory import tiny as tiny_recurrent

TARGETS = ["a dog plays in the park", "two women read"]
TEXT = "zwei Männer spielen Fußball auf der Wiese"


def test_a_hook_point_reads_its_token_axes_once():
    point = HookPoint("batch head query key", "weights", {"query": "enc.seq", "key": "enc"})

    assert point.positions == {"query": TokenAxis("enc", AxisPart.SEQUENCE), "key": TokenAxis("enc")}
    assert [str(axis) for axis in point.positions.values()] == ["enc.seq", "enc"]
    assert TokenAxis.parse("enc.mem") == TokenAxis("enc", AxisPart.MEMORY)


@pytest.mark.parametrize(
    ("declared", "complaint"),
    [("enc.memory", "unknown part 'memory'"), ("enc.", "unknown part ''"), (".seq", "'' is not an axis name"),
     ("seg@segment=2", "is not an axis name")],
)  # fmt: skip
def test_a_hook_point_refuses_a_token_axis_it_cannot_read(declared, complaint):
    with pytest.raises(ValueError, match=complaint):
        HookPoint("batch position d_model", "states", {"position": declared})


def test_roles_are_the_words_the_app_shows():
    assert Role.MEM == "mem" and f"{Role.READ_MEM}" == "read_mem" and json.dumps([Role.WM]) == '["wm"]'
    assert MEMORY_ROLES == {Role.MEM, Role.READ_MEM, Role.WRITE_MEM, Role.WM}
    assert {"mem": 1}[Role.MEM] == 1  # a role finds the app's string keys


def test_an_axis_key_is_its_old_string_and_survives_a_copy():
    plain, per_segment = AxisKey("dec"), AxisKey("seg", segment=2)

    assert plain == "dec" and {plain: 1}["dec"] == 1
    assert (per_segment, per_segment.name, per_segment.call) == ("seg@segment=2", "seg", ("segment", 2))
    copied = copy.deepcopy(per_segment)
    assert (copied, copied.name, copied.call) == (per_segment, "seg", ("segment", 2))
    with pytest.raises(ValueError, match="one call-scope key"):
        AxisKey("seg", segment=2, step=1)


def test_a_per_call_axis_is_asked_with_its_call_and_only_so(tiny_tokenizer):
    loaded = LoadedModel("tiny-rmt", tiny_recurrent(vocab_size=tiny_tokenizer.vocab_size), tiny_tokenizer)
    trace = run_with_trace(loaded, TEXT, names=["layers.0.attn.pattern"])
    seg = TokenAxis("seg")

    assert trace.call_axes == {"seg": "segment", "ctx": "segment"}
    assert trace.axis_roles(seg, 0, segment=1) == trace.roles["seg@segment=1"][0]
    assert trace.axis_roles(seg, 0, call=1, segment=1) == trace.axis_roles(seg, 0, segment=1)  # the count tells nothing
    assert (
        trace.axis_roles(TokenAxis("seg", AxisPart.MEMORY), 0, segment=1) == [Role.READ_MEM] * 2 + [Role.WRITE_MEM] * 2
    )
    with pytest.raises(LookupError, match=r"token axis 'seg' differs from call to call: ask it with segment=\.\.\."):
        trace.axis_roles(seg, 0)
    with pytest.raises(LookupError, match="token axis 'ctx' differs from call to call"):
        trace.axis_tokens(TokenAxis("ctx"), 0, step=1)
    with pytest.raises(LookupError, match="the trace has no token axis seg@segment=99"):
        trace.axis_roles(seg, 0, segment=99)


def test_an_axis_the_same_in_every_call_is_asked_without_one(tiny_tokenizer):
    trace = run_with_trace(make_tiny("memtransformer", tiny_tokenizer), SOURCES, TARGETS, names=["*.pattern"])
    enc = TokenAxis("enc")

    assert trace.call_axes == {}
    assert trace.axis_roles(enc, 0, call=0) == trace.roles["enc"][0]
    assert trace.axis_roles(TokenAxis("enc", AxisPart.MEMORY), 0) == [Role.MEM] * trace.run.memory_size
    assert Role.MEM not in trace.axis_roles(TokenAxis("enc", AxisPart.SEQUENCE), 0)
    with pytest.raises(LookupError, match=r"token axis 'enc' is the same in every call: ask it without an index"):
        trace.axis_roles(enc, 0, segment=0)
    with pytest.raises(LookupError, match="the trace has no token axis tok"):
        trace.axis_roles(TokenAxis("tok"), 0)


def test_the_run_record_is_what_ran(tiny_tokenizer):
    loaded = make_tiny("memtransformer", tiny_tokenizer)
    lesion = Interventions.of(MemorySize(size=1))
    forced = run_with_trace(loaded, SOURCES, TARGETS, names=["logits"], interventions=lesion, seed=7)
    beam = Decoding(method="beam", beam_size=2)
    decoded = run_with_trace(loaded, SOURCES, names=["logits"], decoding=beam)

    run = forced.run
    assert (run.model, run.family, run.config) == ("tiny-memtransformer", "memory_transformer", loaded.config)
    assert run.capabilities == capabilities_of(loaded.config)
    assert (run.interventions, run.memory_size, run.decoding, run.seed) == (lesion, 1, None, 7)
    assert not forced.decoded and forced.sources == SOURCES
    assert forced.outputs == [tiny_tokenizer.decode(ids) for ids in forced.output_ids]
    assert (decoded.run.decoding, decoded.run.memory_size, decoded.decoded) == (beam, loaded.config.memory_size, True)


def test_a_language_model_trace_records_its_own_output(tiny_tokenizer):
    loaded = LoadedModel("tiny-lm", make_tiny_language_model(tiny_tokenizer), tiny_tokenizer)
    continued = run_with_trace(loaded, TEXT, names=["logits"], max_new_tokens=3)
    read = run_with_trace(loaded, TEXT, names=["logits"], max_new_tokens=0)

    assert (continued.run.decoding, continued.decoded) == (GREEDY, True)
    assert (read.run.decoding, read.decoded, read.run.memory_size) == (None, False, 0)
    assert Role.GENERATED in continued.roles["tok"][0] and Role.GENERATED not in read.roles["tok"][0]


def test_the_assembly_refuses_axes_whose_tokens_and_roles_differ(tiny_tokenizer):
    loaded = make_tiny("transformer", tiny_tokenizer)
    request = TraceRequest(["x"], None, None, Interventions(), 0, 0, GREEDY)
    parts = {"captures": {}, "memory_size": 0, "output_ids": [[]], "logits": torch.zeros(1, 0, 4), "decoding": None}

    with pytest.raises(RuntimeError, match="token axis dec: its tokens and roles do not match"):
        assembled_trace(
            loaded, request, tokens={AxisKey("dec"): [["a", "b"]]}, roles={AxisKey("dec"): [[Role.TGT]]}, **parts
        )
    mixed = {AxisKey("seg"): [[]], AxisKey("seg", segment=0): [[]]}
    with pytest.raises(RuntimeError, match=r"token axes \['seg'\] are keyed with more than one call scope"):
        assembled_trace(loaded, request, tokens=mixed, roles=mixed, **parts)
