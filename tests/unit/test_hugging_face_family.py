"""The Hugging Face family on tiny random GPT-2, GPT-NeoX and Llama folders (tests/hugging_face_models.py): the
folders open through the checkpoint registry (and the ones MemLens cannot read are listed broken, saying why), our
captures equal what Hugging Face computes itself, interventions act as plain torch hooks on the same modules do,
the FF memories read the right weights, and the continuation is Hugging Face's own greedy one. Offline."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from copy import deepcopy
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from inference.analyses.ff_values import ff_memories
from inference.core.checkpoint import CheckpointError, CheckpointRegistry, load_checkpoint
from inference.core.continuation import greedy_continuation
from inference.core.decoding import strip_after_eos
from inference.core.family import LoadedModel, capabilities_of, family_of
from inference.core.hooks import hook_points, registered_hooks
from inference.core.interventions import InterventionError, Interventions, Scale, ablate_head, scale_ff_keys
from inference.core.model_record import ModelRecord
from inference.core.trace import Role
from inference.core.tracing import run_with_trace
from inference.families.hugging_face.folder import READER
from inference.families.hugging_face.model import CachedNextToken, HookedCausalLM
from tests.hugging_face_models import (
    ARCHITECTURES,
    D_FF,
    D_MODEL,
    N_HEADS,
    N_LAYERS,
    VOCAB_SIZE,
    build_folder,
    unsupported_folder,
)

TEXT = "the cat saw a big dog in the city"
ATOL = 1e-5
# Where each architecture's modules sit, written out here rather than read from the family's tables: the output
# projection (its input holds the heads' outputs), the FF norm (its input is resid_mid), the MLP, the down
# projection (its input holds the key coefficients) and the blocks.
MODULES = {
    "gpt2": {
        "out_proj": "transformer.h.{i}.attn.c_proj",
        "ff_norm": "transformer.h.{i}.ln_2",
        "mlp": "transformer.h.{i}.mlp",
        "down_proj": "transformer.h.{i}.mlp.c_proj",
    },
    "gpt_neox": {
        "out_proj": "gpt_neox.layers.{i}.attention.dense",
        "ff_norm": "gpt_neox.layers.{i}.post_attention_layernorm",
        "mlp": "gpt_neox.layers.{i}.mlp",
        "down_proj": "gpt_neox.layers.{i}.mlp.dense_4h_to_h",
    },
    "llama": {
        "out_proj": "model.layers.{i}.self_attn.o_proj",
        "ff_norm": "model.layers.{i}.post_attention_layernorm",
        "mlp": "model.layers.{i}.mlp",
        "down_proj": "model.layers.{i}.mlp.down_proj",
    },
}
D_HEAD = D_MODEL // N_HEADS


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A models folder: the three tiny models, a parallel-residual GPT-NeoX, and two folders MemLens cannot open."""
    root = tmp_path_factory.mktemp("hugging_face")
    for arch in ARCHITECTURES:
        build_folder(arch, root / arch)
    build_folder("gpt_neox", root / "neox_parallel", use_parallel_residual=True)
    build_folder("llama", root / "no_tokenizer", tokenizer=False)
    unsupported_folder(root / "bloom")
    return root


@pytest.fixture(scope="module")
def models(root: Path) -> dict[str, LoadedModel]:
    return {arch: load_checkpoint(root / arch, "cpu") for arch in ARCHITECTURES}


def module(loaded: LoadedModel, part: str, layer: int) -> nn.Module:
    return loaded.model.get_submodule("hf." + MODULES[loaded.name][part].format(i=layer))


def prompt_ids(loaded: LoadedModel, text: str = TEXT) -> torch.Tensor:  # [1, t]
    return torch.tensor([[loaded.config.bos_id, *loaded.tokenizer.encode(text)]])


@contextmanager
def pre_hook(target: nn.Module, edit: Callable[[torch.Tensor], torch.Tensor | None]) -> Iterator[None]:
    """A plain torch forward pre-hook on `target` for the block: `edit` sees its input, may return a new one."""

    def hook(module: nn.Module, args: tuple[Any, ...]) -> tuple[Any, ...] | None:
        new = edit(args[0])
        return None if new is None else (new, *args[1:])

    handle = target.register_forward_pre_hook(hook)
    try:
        yield
    finally:
        handle.remove()


@contextmanager
def post_hook(target: nn.Module, see: Callable[[torch.Tensor], None]) -> Iterator[None]:
    """A plain torch forward hook on `target` for the block: `see` sees its output."""
    handle = target.register_forward_hook(lambda module, args, output: see(output))
    try:
        yield
    finally:
        handle.remove()


def hf_logits(loaded: LoadedModel, ids: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return loaded.model.hf(input_ids=ids, use_cache=False).logits


# ---- opening folders


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_each_folder_opens_as_a_hugging_face_model(models, arch):
    loaded = models[arch]
    config = loaded.config
    assert config.family == "hugging_face" and config.model_type == arch
    assert (config.n_layers, config.n_heads, config.d_model, config.d_ff) == (N_LAYERS, N_HEADS, D_MODEL, D_FF)
    assert config.vocab_size == VOCAB_SIZE and config.memory_size == 0
    assert loaded.record == ModelRecord(format="Hugging Face")
    assert {"attention", "generates_text", "next_token", "ff_keys"} == set(capabilities_of(config))
    assert family_of("hugging_face").describe(config).startswith(("GPT-2", "GPT-NeoX", "Llama"))
    if arch == "gpt2":  # one id for BOS and EOS and no pad id: padding with EOS
        assert config.pad_id == config.bos_id == config.eos_id == 1
    else:
        assert (config.pad_id, config.bos_id, config.eos_id) == (0, 3, 1)
    assert loaded.tokenizer.unk_id == 2
    assert not loaded.model.training


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_hook_points_follow_the_language_model_scheme(models, arch):
    points = hook_points(models[arch].model)
    per_layer = ["resid_pre", "attn.pattern", "attn.z", "resid_mid", "ff.keys", "ff.out"]
    assert list(points) == [f"layers.{i}.{part}" for i in range(N_LAYERS) for part in per_layer] + ["out", "logits"]
    pattern, z, keys = points["layers.0.attn.pattern"], points["layers.0.attn.z"], points["layers.1.ff.keys"]
    assert pattern.dims == ("batch", "head", "query", "key") and pattern.sizes == {"head": N_HEADS}
    assert {axis: str(token) for axis, token in pattern.positions.items()} == {"query": "tok", "key": "tok"}
    assert z.dims == ("batch", "head", "query", "d_head") and z.sizes == {"head": N_HEADS}
    assert keys.dims == ("batch", "position", "ff_key") and keys.sizes == {"ff_key": D_FF}


def test_the_registry_lists_the_tiny_models_and_says_why_the_others_are_broken(root):
    registry = CheckpointRegistry(root, device="cpu")
    assert sorted(registry.available()) == sorted([*ARCHITECTURES, "neox_parallel"])
    broken = registry.broken()
    assert set(broken) == {"bloom", "no_tokenizer"}
    assert "model_type 'bloom' is not supported" in broken["bloom"]
    assert "gpt2, gpt_neox, llama" in broken["bloom"]
    assert "tokenizer.json is missing" in broken["no_tokenizer"]
    assert registry.get("llama").config.model_type == "llama"


def test_the_reader_names_what_a_config_lacks_and_sharded_weights(root, tmp_path):
    raw = json.loads((root / "gpt2" / "config.json").read_text())
    with pytest.raises(ValueError, match="lacks n_layer"):
        READER.config(root / "gpt2", {**raw, "n_layer": 0})
    with pytest.raises(ValueError, match="names no eos_token_id"):
        READER.config(root / "gpt2", {**raw, "eos_token_id": None, "bos_token_id": None})
    sharded = build_folder("llama", tmp_path / "sharded")
    (sharded / "model.safetensors").rename(sharded / "model-00001-of-00001.safetensors")
    (sharded / "model.safetensors.index.json").write_text("{}")
    with pytest.raises(CheckpointError, match="sharded weights"):
        load_checkpoint(sharded, "cpu")


def test_a_parallel_residual_block_reads_resid_mid_as_what_the_ff_output_is_added_to(root):
    """GPT-NeoX's parallel residual: the FF reads the block input; resid_mid is the block input + the attention
    output, so resid_mid + ff.out is the block output Hugging Face computes (its hidden states), the logit lens of
    the last layer is the logits, and resid_mid cannot be edited."""
    loaded = load_checkpoint(root / "neox_parallel", "cpu")
    assert loaded.model.parallel_residual and hook_points(loaded.model)["layers.0.resid_mid"].doc.startswith("block")
    ids = prompt_ids(loaded)
    names = [f"layers.{i}.{part}" for i in range(N_LAYERS) for part in ("resid_pre", "resid_mid", "ff.out")]
    trace = run_with_trace(loaded, TEXT, names=names, max_new_tokens=0)
    with torch.no_grad():
        hidden = loaded.model.hf(input_ids=ids, output_hidden_states=True, use_cache=False).hidden_states
    for i in range(N_LAYERS):
        resid_pre, resid_mid = trace.tensor(f"layers.{i}.resid_pre"), trace.tensor(f"layers.{i}.resid_mid")
        torch.testing.assert_close(resid_pre, hidden[i], atol=ATOL, rtol=0)
        assert (resid_mid - resid_pre).abs().max() > 1e-3  # the attention's output is in it
        if i < N_LAYERS - 1:  # the last hidden state is after the final norm
            torch.testing.assert_close(resid_mid + trace.tensor(f"layers.{i}.ff.out"), hidden[i + 1], atol=ATOL, rtol=0)
    memories = family_of("hugging_face").ff_memories(loaded.model)
    last = memories.layers[-1]
    lens_trace = run_with_trace(loaded, TEXT, names=memories.capture_hooks(), max_new_tokens=0)
    residual, ff_out = lens_trace.tensor(memories.residual_hook(last)), lens_trace.tensor(f"{last}.out")
    lens = memories.stream_logits(memories.layer_output(last, residual, ff_out))
    torch.testing.assert_close(lens, hf_logits(loaded, ids), atol=1e-4, rtol=0)
    with pytest.raises(InterventionError, match="parallel-residual block is read, not edited"):
        run_with_trace(loaded, TEXT, names=["logits"], max_new_tokens=0,
                       interventions=Interventions.of(Scale(hook="layers.1.resid_mid", factor=0.5)))  # fmt: skip


def test_a_parallel_residual_ff_key_edit_is_the_torch_hook_on_its_down_projection(root):
    loaded = load_checkpoint(root / "neox_parallel", "cpu")
    keys = (2, 9, 33)
    ids = prompt_ids(loaded)
    edited = run_with_trace(loaded, TEXT, names=["logits"], max_new_tokens=0,
                            interventions=Interventions.of(scale_ff_keys("layers.0.ff", keys, 0.0))).logits  # fmt: skip

    def zero(x: torch.Tensor) -> torch.Tensor:
        x = x.clone()
        x[..., list(keys)] = 0.0
        return x

    down = loaded.model.get_submodule("hf.gpt_neox.layers.0.mlp.dense_4h_to_h")
    with pre_hook(down, zero):
        theirs = hf_logits(loaded, ids)
    assert (theirs - hf_logits(loaded, ids)).abs().max() > 1e-3
    torch.testing.assert_close(edited, theirs, atol=ATOL, rtol=0)


def test_build_makes_the_same_model_with_fresh_weights(models):
    for loaded in models.values():
        built = family_of("hugging_face").build(loaded.config)
        shapes = {name: tuple(p.shape) for name, p in built.state_dict().items()}
        assert shapes == {name: tuple(p.shape) for name, p in loaded.model.state_dict().items()}
        assert list(hook_points(built)) == list(hook_points(loaded.model))


def test_the_wrapper_refuses_a_model_of_another_layout(models):
    with pytest.raises(ValueError, match="has no module transformer.h"):
        HookedCausalLM(models["llama"].model.hf, models["gpt2"].config)


def test_a_deep_copy_routes_its_tensors_through_its_own_hook_points(models):
    loaded = models["gpt2"]
    copy = deepcopy(loaded.model)
    seen: dict[str, list[torch.Tensor]] = {"copy": [], "original": []}
    with (
        torch.no_grad(),
        registered_hooks(copy, [("layers.0.ff.keys", lambda tensor, point: seen["copy"].append(tensor))]),
        registered_hooks(loaded.model, [("layers.0.ff.keys", lambda tensor, point: seen["original"].append(tensor))]),
    ):
        logits = copy(prompt_ids(loaded))
    assert len(seen["copy"]) == 1 and not seen["original"]
    assert torch.allclose(logits, hf_logits(loaded, prompt_ids(loaded)), atol=ATOL)


# ---- captures against Hugging Face's own outputs


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_captures_equal_hugging_face_outputs(models, arch):
    loaded = models[arch]
    ids = prompt_ids(loaded)
    trace = run_with_trace(loaded, TEXT, max_new_tokens=0)
    seen: dict[str, torch.Tensor] = {}

    def keep(name: str) -> Callable[[torch.Tensor], None]:
        def edit(x: torch.Tensor) -> None:
            seen[name] = x.detach().clone()

        return edit

    with torch.no_grad(), ExitStack() as hooks:
        for i in range(N_LAYERS):
            for part in ("out_proj", "ff_norm", "down_proj"):  # their inputs
                hooks.enter_context(pre_hook(module(loaded, part, i), keep(f"{part}.{i}")))
            hooks.enter_context(post_hook(module(loaded, "mlp", i), keep(f"mlp.{i}")))  # its output
        out = loaded.model.hf(input_ids=ids, output_attentions=True, output_hidden_states=True, use_cache=False)
    assert trace.output_ids[0] == ids[0, 1:].tolist()
    assert torch.allclose(trace.logits, out.logits, atol=ATOL)
    assert torch.allclose(trace.tensor("logits"), out.logits, atol=ATOL)
    assert torch.allclose(trace.tensor("out"), out.hidden_states[-1], atol=ATOL)  # the last: after the final norm
    for i in range(N_LAYERS):
        assert torch.allclose(trace.tensor(f"layers.{i}.attn.pattern"), out.attentions[i], atol=ATOL)
        assert torch.allclose(trace.tensor(f"layers.{i}.resid_pre"), out.hidden_states[i], atol=ATOL)
        heads = seen[f"out_proj.{i}"].view(1, -1, N_HEADS, D_HEAD).transpose(1, 2)  # [1, h, t, d_head]
        assert torch.allclose(trace.tensor(f"layers.{i}.attn.z"), heads, atol=ATOL)
        assert torch.allclose(trace.tensor(f"layers.{i}.ff.keys"), seen[f"down_proj.{i}"], atol=ATOL)
        assert torch.allclose(trace.tensor(f"layers.{i}.resid_mid"), seen[f"ff_norm.{i}"], atol=ATOL)
        assert torch.allclose(trace.tensor(f"layers.{i}.ff.out"), seen[f"mlp.{i}"], atol=ATOL)
        if i + 1 < N_LAYERS:  # pre-LN: the block output is resid_mid + ff.out, the next block's input
            layer_out = trace.tensor(f"layers.{i}.resid_mid") + trace.tensor(f"layers.{i}.ff.out")
            assert torch.allclose(layer_out, out.hidden_states[i + 1], atol=ATOL)
    roles = trace.roles["tok"][0]
    assert roles[0] == Role.SPECIAL and set(roles[1:]) == {Role.TEXT}


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_a_padded_batch_scores_each_text_as_alone(models, arch):
    loaded = models[arch]
    short, long = "the cat", "the dog saw a big red car in the city"
    batch = run_with_trace(loaded, [short, long], names=["logits"], max_new_tokens=0)
    alone = run_with_trace(loaded, short, names=["logits"], max_new_tokens=0)
    n = alone.logits.shape[1]
    assert torch.allclose(batch.logits[0, :n], alone.logits[0], atol=ATOL)
    assert batch.roles["tok"][0][n:] == [Role.PAD] * (batch.logits.shape[1] - n)
    assert batch.roles["tok"][0][0] == Role.SPECIAL


# ---- interventions against plain torch hooks


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_ablating_a_head_zeroes_its_slice_of_the_output_projection_input(models, arch):
    loaded = models[arch]
    ids = prompt_ids(loaded)
    trace = run_with_trace(
        loaded, TEXT, interventions=Interventions.of(ablate_head("layers.0.attn", 1)), max_new_tokens=0
    )

    def zero_head(x: torch.Tensor) -> torch.Tensor:
        x = x.clone()
        x[..., D_HEAD : 2 * D_HEAD] = 0
        return x

    with pre_hook(module(loaded, "out_proj", 0), zero_head):
        expected = hf_logits(loaded, ids)
    assert torch.allclose(trace.logits, expected, atol=ATOL)
    assert (trace.logits - hf_logits(loaded, ids)).abs().max() > 1e-3  # the edit shows


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_scaling_ff_keys_edits_the_down_projection_input(models, arch):
    loaded = models[arch]
    ids = prompt_ids(loaded)
    trace = run_with_trace(
        loaded, TEXT, interventions=Interventions.of(scale_ff_keys("layers.1.ff", (3, 5), 0.0)), max_new_tokens=0
    )

    def zero_keys(x: torch.Tensor) -> torch.Tensor:
        x = x.clone()
        x[..., [3, 5]] = 0
        return x

    with pre_hook(module(loaded, "down_proj", 1), zero_keys):
        expected = hf_logits(loaded, ids)
    assert torch.allclose(trace.logits, expected, atol=ATOL)
    assert (trace.logits - hf_logits(loaded, ids)).abs().max() > 1e-4
    keys = trace.tensor("layers.1.ff.keys")
    assert keys[..., [3, 5]].abs().max() == 0  # captures see the edit


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_a_pattern_is_read_never_edited(models, arch):
    scale = Scale(hook="layers.0.attn.pattern", axis="head", index=(0,), factor=0.5)
    with pytest.raises(InterventionError, match="read, not edited: scale layers.0.attn.z"):
        run_with_trace(models[arch], TEXT, interventions=Interventions.of(scale), max_new_tokens=3)


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_interventions_hold_through_the_continuation(models, arch):
    """The greedy continuation under an ablated head is Hugging Face's greedy continuation under the same edit."""
    loaded = models[arch]
    trace = run_with_trace(
        loaded, TEXT, interventions=Interventions.of(ablate_head("layers.1.attn", 2)), max_new_tokens=6
    )

    def zero_head(x: torch.Tensor) -> torch.Tensor:
        x = x.clone()
        x[..., 2 * D_HEAD : 3 * D_HEAD] = 0
        return x

    with pre_hook(module(loaded, "out_proj", 1), zero_head):
        expected = hf_greedy(loaded, prompt_ids(loaded), 6)
    assert trace.output_ids[0][len(prompt_ids(loaded)[0]) - 1 :] == expected


# ---- FF memories


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_ff_memories_read_the_down_projection_and_the_lm_head(models, arch):
    loaded = models[arch]
    memories = ff_memories(loaded.model)
    assert memories.layers == [f"layers.{i}.ff" for i in range(N_LAYERS)] and memories.axis == "tok"
    for i, layer in enumerate(memories.layers):
        down = module(loaded, "down_proj", i)
        weight = down.get_parameter("weight").detach()
        by_layout = weight if arch == "gpt2" else weight.T  # Conv1D (in, out): row i; Linear (out, in): column i
        assert memories.values[layer].shape == (D_FF, D_MODEL)
        assert torch.equal(memories.values[layer], by_layout)
        with torch.no_grad():  # value i is what key i alone writes: down(e_i) - down(0)
            written = down(torch.eye(D_FF)) - down(torch.zeros(1, D_FF))  # [d_ff, d]
        assert torch.allclose(memories.values[layer], written, atol=ATOL)
    assert torch.equal(memories.output_embedding, loaded.model.hf.get_submodule("lm_head").weight.detach())
    trace = run_with_trace(loaded, TEXT, names=memories.capture_hooks(), max_new_tokens=0)
    last = memories.layers[-1]
    residual, ff_out = trace.tensor(memories.residual_hook(last)), trace.tensor(f"{last}.out")
    stream = memories.layer_output(last, residual, ff_out)
    assert torch.equal(stream, residual + ff_out)
    assert torch.allclose(memories.stream_logits(stream), trace.logits, atol=ATOL)


# ---- the continuation


def hf_greedy(loaded: LoadedModel, ids: torch.Tensor, max_new_tokens: int) -> list[int]:
    """Hugging Face's own greedy continuation of `ids` (with its key/value cache), EOS and after left out."""
    with torch.no_grad():
        generated = loaded.model.hf.generate(
            input_ids=ids,
            attention_mask=torch.ones_like(ids),
            max_new_tokens=max_new_tokens,
            do_sample=False,
            pad_token_id=loaded.config.pad_id,
        )
    return strip_after_eos(generated[:, ids.shape[1] :], loaded.config.eos_id)[0]


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_the_continuation_is_hugging_face_greedy_generation(models, arch):
    loaded = models[arch]
    ids = prompt_ids(loaded)
    trace = run_with_trace(loaded, TEXT, max_new_tokens=8)
    expected = hf_greedy(loaded, ids, 8)
    assert trace.outputs[0] == loaded.tokenizer.decode(expected)
    assert trace.output_ids[0] == ids[0, 1:].tolist() + expected
    assert trace.run.decoding is not None
    roles = trace.roles["tok"][0]
    assert roles[ids.shape[1] :] == [Role.GENERATED] * len(expected)
    assert torch.allclose(trace.logits[:, : ids.shape[1]], hf_logits(loaded, ids), atol=ATOL)


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_the_cached_continuation_reads_each_new_token_once_and_keeps_a_lesions_effect(models, arch):
    """With the key/value cache every step runs the new token alone (the block input the hooks see has one
    position after the prompt), and under a head ablation and a key edit it continues exactly as the whole-window
    re-run does under the same edits."""
    loaded = models[arch]
    model = loaded.model
    prompt = prompt_ids(loaded)[0].tolist()
    edits = Interventions([ablate_head("layers.0.attn", 1), scale_ff_keys("layers.1.ff", (3, 5, 7), 4.0)])
    widths: list[int] = []
    with post_hook(model.get_submodule("layers.0.resid_pre"), lambda x: widths.append(x.shape[1])):
        cached = greedy_continuation(model, prompt, 8, edits, CachedNextToken(model))
    assert widths[0] == len(prompt) and widths[1:] == [1] * (len(widths) - 1) and len(widths) == min(8, len(cached) + 1)
    widths.clear()
    with post_hook(model.get_submodule("layers.0.resid_pre"), lambda x: widths.append(x.shape[1])):
        rerun = greedy_continuation(model, prompt, 8, edits)
    assert widths == [len(prompt) + i for i in range(len(widths))]  # the window re-read at every step
    assert cached == rerun and cached != greedy_continuation(model, prompt, 8)  # the edits change it


def test_the_continuation_stops_at_the_context_window(models):
    loaded = models["llama"]
    text = " ".join(["the"] * (loaded.config.max_positions - 3))  # [BOS] + 61 tokens: room for 2 more
    trace = run_with_trace(loaded, text, names=["logits"], max_new_tokens=10)
    assert trace.logits.shape[1] <= loaded.config.max_positions
    too_long = " ".join(["the"] * loaded.config.max_positions)
    with pytest.raises(ValueError, match="reads at most 63"):
        run_with_trace(loaded, too_long, max_new_tokens=0)


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_trigger_mining_keeps_each_keys_strongest_sentence(models, arch):
    """Mining reads a Hugging Face model's keys as it reads the language model's: each key's top sentence is the
    one whose key coefficient, at any position but the last (which predicts past the sentence), is largest;
    recomputed here text by text from plain forward hooks on the model's own framing of each text."""
    from inference.corpus_jobs.states import mine_triggers
    from inference.runs.trigger_mining import prefix_stream

    loaded = models[arch]
    texts = ["the king saw a dog", "a woman went to the city", "the boy ate one fish", "she said two words"]
    state = mine_triggers(loaded, texts, batch_size=2, top_k=1)
    assert state.sentences_consumed == len(texts) and list(state.coefficients) == ["layers.0.ff", "layers.1.ff"]
    peaks = []  # [sentence, d_ff]: each key's largest coefficient in each sentence
    for text in texts:
        ids = torch.tensor([[loaded.tokenizer.bos_id, *loaded.tokenizer.encode(text)]])  # [1, t]: the family's prompt
        assert prefix_stream(loaded, text) == ids[0].tolist()  # the stream the triggers show is the one traced
        captured: list[torch.Tensor] = []
        with post_hook(loaded.model.get_submodule("layers.1.ff.keys"), captured.append), torch.no_grad():
            loaded.model(ids)
        peaks.append(captured[0][0, :-1].max(dim=0).values)  # [d_ff]
    best = torch.stack(peaks).argmax(dim=0)  # [d_ff]
    assert torch.equal(state.sentences["layers.1.ff"][:, 0], best)
