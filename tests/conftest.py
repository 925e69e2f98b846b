"""Shared fixtures: tiny seeded models of every family on a tiny BPE vocabulary."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from inference.core.family import LoadedModel, build_model
from inference.core.places import DATA_DIR_ENV, resolve_data_dir
from inference.core.tokenizer import TextTokenizer, train_bpe
from inference.families.active_memory.model import ActiveMemoryConfig
from inference.families.gru_attention.model import GRUAttentionConfig
from inference.families.language_model.model import LanguageModel, LanguageModelConfig
from inference.families.memory_transformer.model import VARIANTS, MemoryTransformerConfig
from inference.families.working_memory.model import WorkingMemoryConfig
from training.data.fetch import load_manifest, missing_files

# Tests never reach outside the machine: Hugging Face libraries read local folders only.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
# Servers the tests start do not warm models in the background (it would compete with the tests for the CPU);
# tests/app/test_start_up.py turns it on.
os.environ["MEMLENS_WARM_UP"] = "false"


@pytest.fixture(autouse=True)
def environment_as_found():
    """Each test leaves the environment as it found it: a command under test (memlens serve) sets MEMLENS_*
    settings for the processes it starts, which an app built by a later test would read (its models folder
    listed among every app's models)."""
    before = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(before)


TINY_CORPUS = [
    "ein Hund läuft durch den Park",
    "a dog runs through the park",
    "zwei Männer spielen Fußball auf der Wiese",
    "two men play football on the meadow",
    "eine Frau liest ein Buch",
    "a woman reads a book",
    "Kinder spielen im Wasser",
    "children play in the water",
]
SOURCES = ["ein Hund spielt im Park", "zwei Frauen lesen"]
TINY_MEMORY = 3

# A long German paragraph (well over a hundred tokens): views must keep every label of it readable.
LONG_TEXT = (
    "Ein Mann in einem blauen Hemd steht auf einer Leiter und putzt ein Fenster, "
    "während zwei Kinder im Garten mit einem großen "
    "roten Ball spielen und ihre Mutter auf der Terrasse sitzt und ein Buch liest, "
    "das sie gestern in der kleinen Buchhandlung am "
    "Marktplatz gekauft hat. Ein alter Hund schläft neben der Tür in der Sonne, "
    "und eine Katze beobachtet die Vögel, die auf dem "
    "Dach des Hauses sitzen und singen. Auf der Straße fahren viele Autos an einer Frau vorbei, "
    "die mit ihrem Fahrrad zur Arbeit fährt."
)


@pytest.fixture(scope="session")
def tiny_tokenizer() -> TextTokenizer:
    return train_bpe(TINY_CORPUS * 4, vocab_size=80)


def tiny_config(variant: str, vocab_size: int) -> MemoryTransformerConfig:
    return MemoryTransformerConfig(
        variant=variant,
        vocab_size=vocab_size,
        d_model=16,
        d_ff=32,
        n_heads=2,
        n_encoder_layers=2,
        n_decoder_layers=2,
        memory_size=0 if variant == "transformer" else TINY_MEMORY,
        max_positions=64,
    )


def make_tiny_working_memory(tokenizer: TextTokenizer, memory_bias: float = 1.0, seed: int = 0) -> LoadedModel:
    """A tiny working-memory model whose type head leans towards memory by
    `memory_bias` logits, so that it writes some memory before translating."""
    torch.manual_seed(seed)
    config = WorkingMemoryConfig(
        vocab_size=tokenizer.vocab_size,
        d_model=16,
        d_ff=32,
        n_heads=2,
        n_encoder_layers=2,
        n_decoder_layers=2,
        memory_size=TINY_MEMORY,
        max_positions=64,
    )
    model = build_model(config).eval()
    with torch.no_grad():
        model.type_head.bias.copy_(torch.tensor([memory_bias, 0.0]))
    return LoadedModel("tiny-working-memory", model, tokenizer)


def make_tiny_language_model(tokenizer: TextTokenizer, seed: int = 0) -> LanguageModel:
    torch.manual_seed(seed)
    config = LanguageModelConfig(
        vocab_size=tokenizer.vocab_size, d_model=16, d_ff=32, n_heads=2, n_layers=2, max_positions=64
    )
    return build_model(config).eval()


def make_tiny(variant: str, tokenizer: TextTokenizer, seed: int = 0) -> LoadedModel:
    """A tiny Memory Transformer of `variant`."""
    torch.manual_seed(seed)
    model = build_model(tiny_config(variant, tokenizer.vocab_size)).eval()
    return LoadedModel(f"tiny-{variant}", model, tokenizer)


def make_tiny_active_memory(tokenizer: TextTokenizer, variant: str = "extended", seed: int = 0) -> LoadedModel:
    """A tiny active memory model (paper 001): 8 maps, width 3, 2 CGRU layers."""
    torch.manual_seed(seed)
    config = ActiveMemoryConfig(
        variant=variant, vocab_size=tokenizer.vocab_size, maps=8, width=3, length_factor=1.5, max_positions=64
    )
    return LoadedModel(f"tiny-{variant}", build_model(config).eval(), tokenizer)


def make_tiny_gru_attention(tokenizer: TextTokenizer, seed: int = 0) -> LoadedModel:
    torch.manual_seed(seed)
    config = GRUAttentionConfig(vocab_size=tokenizer.vocab_size, embed_size=8, d_model=16, max_positions=64)
    return LoadedModel("tiny-gru-attention", build_model(config).eval(), tokenizer)


@pytest.fixture(params=VARIANTS)
def tiny(request, tiny_tokenizer) -> LoadedModel:
    return make_tiny(request.param, tiny_tokenizer)


MEMORY_VARIANTS = [v for v in VARIANTS if v != "transformer"]


@pytest.fixture(params=MEMORY_VARIANTS)
def tiny_memory(request, tiny_tokenizer) -> LoadedModel:
    return make_tiny(request.param, tiny_tokenizer)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip tests marked `needs_corpus("name", ...)` when the data folder lacks a corpus,
    saying which (all of them) and how to get them."""
    data_dir = resolve_data_dir()
    reasons: dict[str, str | None] = {}
    for item in items:
        missing = []
        for marker in item.iter_markers("needs_corpus"):
            for corpus in marker.args:
                if corpus not in reasons:
                    reasons[corpus] = missing_corpus_reason(data_dir, corpus)
                if reasons[corpus]:
                    missing.append(reasons[corpus])
        if missing:
            item.add_marker(pytest.mark.skip(reason="; ".join(missing)))


def missing_corpus_reason(data_dir: Path, corpus: str) -> str | None:
    missing = missing_files(data_dir, corpus)
    if not missing:
        return None
    total = len(load_manifest().corpora[corpus])
    what = (
        f"{data_dir / corpus} is missing"
        if len(missing) == total
        else f"{data_dir / missing[0]} is missing ({len(missing)} of {total} files)"
    )
    return f"needs the {corpus} corpus: {what}; set {DATA_DIR_ENV} or run `memlens data fetch {corpus}`"


@pytest.fixture(scope="session")
def segment_checkpoints(tmp_path_factory) -> Path:
    """A folder with two briefly trained task models (reverse, 3 segments): RMT with
    4 memory tokens (its memory probed) and Transformer-XL with a 4-position cache;
    their names are their carry."""
    from training.loop.segment_task_run import TaskRun, train_task

    root = tmp_path_factory.mktemp("segment_checkpoints")
    for carry in ("rmt", "xl"):
        run = TaskRun("reverse", 3, carry, seed=1, steps=40, batch_size=8, memory=4, d_model=16, d_ff=32,
                      n_heads=2, eval_every=40)  # fmt: skip
        train_task(run, root / carry, tmp_path_factory.mktemp(f"run_{carry}"), log=lambda line: None)
    from training.cli import main

    assert main(["memory-probe", str(root / "rmt"), "--train", "40", "--validation", "20", "--test", "20"]) == 0
    return root


@pytest.fixture(scope="session")
def ray_cluster():
    """A local Ray cluster of 2 CPUs, started once for the test run (it takes seconds and hundreds of MB)."""
    import ray

    from inference.corpus_jobs.ray_executor import start_ray

    start_ray(num_cpus=2)
    yield
    ray.shutdown()
