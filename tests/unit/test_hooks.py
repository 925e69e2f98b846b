"""Hook names are stable: the list of every family matches a golden file."""

import os
from pathlib import Path

import pytest

from inference.core.family import build_model
from inference.core.hooks import hook_points, select_hook_names
from inference.families.active_memory.model import VARIANTS
from inference.families.memory_transformer.model import VARIANTS as MEMORY_TRANSFORMER_VARIANTS
from tests.conftest import (
    make_tiny_active_memory,
    make_tiny_gru_attention,
    make_tiny_language_model,
    make_tiny_working_memory,
    tiny_config,
)

GOLDEN = Path(__file__).parent.parent / "golden" / "hook_names.txt"


def hook_listing(tokenizer) -> str:
    models = {variant: build_model(tiny_config(variant, vocab_size=40)) for variant in MEMORY_TRANSFORMER_VARIANTS}
    models["working_memory"] = make_tiny_working_memory(tokenizer).model
    models["language_model"] = make_tiny_language_model(tokenizer)
    for variant in VARIANTS:
        models[f"active_memory/{variant}"] = make_tiny_active_memory(tokenizer, variant).model
    models["gru_attention"] = make_tiny_gru_attention(tokenizer).model
    lines = []
    for family, model in models.items():
        for name, point in hook_points(model).items():
            axes = labelled("positions", point.positions) + labelled("sizes", point.sizes)
            lines.append(f"{family}  {name}  {point.shape}{axes}")
    return "\n".join(lines) + "\n"


def labelled(label: str, axes: dict) -> str:
    """E.g. "  positions query=enc key=enc"; nothing for no axes."""
    return f"  {label} " + " ".join(f"{axis}={value}" for axis, value in axes.items()) if axes else ""


def test_hook_names_match_golden_file(tiny_tokenizer):
    listing = hook_listing(tiny_tokenizer)
    if os.environ.get("MEMLENS_UPDATE_GOLDEN"):
        GOLDEN.write_text(listing)
    assert listing == GOLDEN.read_text(), (
        "hook names changed; if intended, rerun with MEMLENS_UPDATE_GOLDEN=1 and review the diff"
    )


def test_unknown_hook_name_is_refused():
    model = build_model(tiny_config("memtransformer", vocab_size=40))
    with pytest.raises(ValueError, match="no hook point matches"):
        select_hook_names(model, ["encoder.layers.0.attn.patern"])
    assert select_hook_names(model, ["*.cross_attn.pattern"]) == [
        "decoder.layers.0.cross_attn.pattern",
        "decoder.layers.1.cross_attn.pattern",
    ]


def test_a_built_model_keeps_its_hook_points_and_a_part_of_it_finds_its_own():
    model = build_model(tiny_config("memtransformer", vocab_size=40))
    walked = {m.name: m for m in model.modules() if type(m).__name__ == "HookPoint"}
    assert len(walked) > 10 and hook_points(model) == walked  # kept when built, in module order
    assert list(hook_points(model)) == list(walked)
    hook_points(model).clear()  # a caller's copy: the model's own stays whole
    assert hook_points(model) == walked
    part = model.encoder.layers[0]
    assert hook_points(part) == {name: m for name, m in walked.items() if name.startswith("encoder.layers.0.")}
