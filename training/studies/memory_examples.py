"""Example sentences for the Working memory page, chosen by measuring.

For every working-memory checkpoint, the held-out validation pairs of its
corpus (Multi30k val for German-English, the ru_en val portions for
Russian-English, `training.data.corpora`) are read with seed 0, as the page runs
them:

1. screen: the whole split in batches; a sentence is a candidate when it
   writes at least one memory token. Until its first memory token a run is
   greedy, so whether a sentence writes memory does not depend on the batch;
2. measure: the first MEASURED candidates (in the split's order) of at most
   MAX_WORDS words, each alone (batch of one, seed 0, the app's default step
   budget: exactly what the page shows), plain, with the memory masked and
   with memory size 0;
3. pick: the sentences whose plain translation reads as right first (sentence
   chrF against the reference at least RIGHT_CHRF: a page opens on the first),
   then those whose translation changes under both lesions, then under one,
   shorter sentences first; EXAMPLES_PER_MODEL of them.

Written to app/data/memory_examples.json with the measured counts:

    python -m training.studies.memory_examples [--checkpoints checkpoints] [--data-dir DIR]
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from tqdm import tqdm

from inference.analyses.quality import RIGHT_CHRF, sentence_chrf
from inference.analyses.working_memory import memory_tokens
from inference.core.capabilities import Capability
from inference.core.checkpoint import load_checkpoint, read_config
from inference.core.family import LoadedModel, capabilities_of
from inference.core.interventions import Interventions
from inference.core.places import MEMORY_EXAMPLES_FILE, resolve_data_dir
from inference.core.trace import Trace
from inference.core.tracing import run_with_trace
from inference.runs.memory_corpus import memory_lesions, wm_generate_all
from training.data.corpora import corpus_of
from training.studies.example_study import study_arguments, write_study

SEED = 0  # the page's default seed
SPLIT = "val"
MAX_WORDS = 16  # a sentence that reads at a glance
MEASURED = 200  # candidates run alone per model (three runs each)
EXAMPLES_PER_MODEL = 6


@dataclass
class Measured:
    source: str
    reference: str
    memory_tokens: int  # written with seed 0, alone, as on the page
    memory: list[str]
    translation: str
    masked: str  # translation with the memory masked
    no_memory: str  # translation with memory size 0

    @property
    def chrf(self) -> float:
        return sentence_chrf(self.translation, self.reference)

    @property
    def changes(self) -> int:
        """Lesions that change the translation (0 to 2)."""
        return (self.masked != self.translation) + (self.no_memory != self.translation)


def screen(loaded: LoadedModel, sources: list[str]) -> list[int]:
    """Indices of the sources that write at least one memory token (batched, seed 0)."""
    examples = wm_generate_all(loaded.model, loaded.tokenizer, sources, seed=SEED)
    return [i for i, example in enumerate(examples) if example.memory]


@torch.no_grad()
def measure(loaded: LoadedModel, source: str, reference: str) -> Measured:
    """One sentence alone, seed 0, traced as the page traces it: plain, masked and without memory."""

    def run(interventions: Interventions | None) -> Trace:
        return run_with_trace(loaded, source, names=[], interventions=interventions, seed=SEED)

    plain = run(None)
    lesioned = {name: run(lesion).outputs[0] for name, lesion in memory_lesions().items()}
    memory = memory_tokens(plain)
    return Measured(source, reference, len(memory), memory, plain.outputs[0], **lesioned)


def pick(measured: list[Measured], n: int = EXAMPLES_PER_MODEL) -> list[Measured]:
    """The sentences that write memory: those translated right first, then those whose translation the lesions
    change, shorter first."""
    writing = [m for m in measured if m.memory_tokens]
    return sorted(writing, key=lambda m: (m.chrf < RIGHT_CHRF, -m.changes, len(m.source.split()), m.source))[:n]


def model_examples(loaded: LoadedModel, data_dir: Path) -> dict:
    corpus = corpus_of(loaded.name, loaded.record.corpus)
    pairs = corpus.read(data_dir)[SPLIT]
    candidates = [pairs[i] for i in screen(loaded, [source for source, _ in pairs])]
    short = [(s, r) for s, r in candidates if len(s.split()) <= MAX_WORDS][:MEASURED]
    measured = [measure(loaded, s, r) for s, r in tqdm(short, desc=f"{loaded.name}: measuring alone", unit="sentence")]
    chosen = pick(measured)
    return {
        "corpus": f"the {SPLIT} split of {corpus.name}",
        "sentences": len(pairs),
        "writing_memory": len(candidates),
        "measured_alone": len(measured),
        "writing_memory_alone": sum(1 for m in measured if m.memory_tokens),
        "changed_by_mask": sum(1 for m in measured if m.memory_tokens and m.masked != m.translation),
        "changed_by_no_memory": sum(1 for m in measured if m.memory_tokens and m.no_memory != m.translation),
        "translated_right": sum(1 for m in measured if m.memory_tokens and m.chrf >= RIGHT_CHRF),
        "examples": [{**asdict(m), "chrf": round(m.chrf, 1)} for m in chosen],
    }


def working_memory_checkpoints(root: Path) -> list[Path]:
    """The checkpoint folders under `root` whose model writes a working memory."""
    folders = sorted(p for p in root.iterdir() if (p / "config.json").exists())
    return [p for p in folders if Capability.WORKING_MEMORY in capabilities_of(read_config(p)[0])]


def write_examples(checkpoints: Path, data_dir: Path, out: Path = MEMORY_EXAMPLES_FILE) -> dict:
    models = {}
    for folder in working_memory_checkpoints(checkpoints):
        loaded = load_checkpoint(folder, device="cpu")  # the server's numerics: the page runs on the CPU by default
        models[folder.name] = model_examples(loaded, data_dir)
    written = {
        "seed": SEED,
        "how": "python -m training.studies.memory_examples: sentences of the held-out validation split that write "
        "memory with seed 0 when run alone; those translated right (sentence chrF at least "
        f"{RIGHT_CHRF:g}) first, then those whose translation the mask or memory size 0 changes",
        "models": models,
    }
    return write_study(out, written)


def main(argv: list[str] | None = None) -> None:
    args = study_arguments("memory_examples", __doc__, MEMORY_EXAMPLES_FILE, argv)
    written = write_examples(args.checkpoints, resolve_data_dir(args.data_dir), args.out)
    for name, found in written["models"].items():
        print(
            f"{name}: {found['writing_memory']} of {found['sentences']} {found['corpus']} sentences write memory; "
            f"{found['writing_memory_alone']} of {found['measured_alone']} short ones alone, "
            f"{found['translated_right']} of them translated right; "
            f"translation changed by the mask in {found['changed_by_mask']}, "
            f"by memory size 0 in {found['changed_by_no_memory']}"
        )


if __name__ == "__main__":
    main()
