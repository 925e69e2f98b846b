"""The translations behind the translation tables of docs/results.md: a
checkpoint's greedy outputs on its corpus's headline test split, as trained
and under every lesion the tables compare (each memory size of the lesion
sweep, the working memory masked). They are stored beside the weights in
outputs.json.gz, so every table and every paired bootstrap interval is
recomputed from them (training.report.results) without translating again.

The file is gzip with no timestamp: the same outputs give the same bytes, so
re-measuring a checkpoint whose outputs did not change changes nothing in git.
`write_outputs` and `read_outputs` also keep the memory-content study's
translations (training.studies.memory_content, another file name, one record
per domain).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from inference.core.capabilities import Capability
from inference.core.family import LoadedModel, capabilities_of
from inference.core.interventions import NO_INTERVENTIONS, Interventions, MemorySize
from inference.runs.lesion import lesion_sizes
from inference.runs.memory_corpus import memory_lesions
from inference.runs.translate import translate_all
from training.data.translation import Pair

OUTPUTS_FILE = "outputs.json.gz"
AS_TRAINED = "as trained"
MASKED = "masked memory"
MEMORY = "memory "  # + the size: the model run with that many memory slots


def memory_condition(size: int) -> str:
    return f"{MEMORY}{size}"


def memory_size_of(condition: str) -> int | None:
    """The memory size a condition runs the model with; None for the others."""
    size = condition.removeprefix(MEMORY)
    return int(size) if condition.startswith(MEMORY) and size.isdigit() else None


def conditions(loaded: LoadedModel) -> dict[str, Interventions]:
    """What the tables compare for this model: as trained; each lesion size but the trained one (that is the
    model as trained); the working memory masked."""
    config = loaded.config
    asked = {AS_TRAINED: NO_INTERVENTIONS}
    if config.memory_size:
        for size in lesion_sizes(config.memory_size, config.max_memory_size):
            if size != config.memory_size:
                asked[memory_condition(size)] = Interventions.of(MemorySize(size=size))
    if Capability.WORKING_MEMORY in capabilities_of(config):
        asked[MASKED] = memory_lesions()["masked"]
    return asked


def measure_outputs(loaded: LoadedModel, split: str, pairs: list[Pair], log=print) -> dict:
    """{"split", "sentences", "outputs": {condition: translations}} of the test pairs, in their order."""
    sources = [source for source, _ in pairs]
    outputs = {}
    for name, interventions in conditions(loaded).items():
        log(f"{loaded.name}: translating {split} ({len(sources)} sentences), {name}")
        outputs[name] = translate_all(loaded.model, loaded.tokenizer, sources, interventions=interventions)
    return {"split": split, "sentences": len(sources), "outputs": outputs}


def write_outputs(folder: Path, record: dict, name: str = OUTPUTS_FILE) -> Path:
    path = folder / name
    text = json.dumps(record, ensure_ascii=False, indent=0) + "\n"
    path.write_bytes(gzip.compress(text.encode("utf-8"), mtime=0))
    return path


def read_outputs(folder: Path, name: str = OUTPUTS_FILE) -> dict | None:
    """The stored outputs of a checkpoint folder (file `name`); None where it has none."""
    path = folder / name
    return json.loads(gzip.decompress(path.read_bytes())) if path.exists() else None
