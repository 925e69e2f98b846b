"""The FF-memory study files beside a checkpoint, as the runner reads and caches them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from inference.analyses.ff_mining import TriggerStore
from inference.core.byte_cache import tensor_bytes
from inference.core.checkpoint import read_json_object
from inference.core.ff_memories import FFMemories
from inference.corpora.ff_study_files import ANALYSIS_FILE, TRIGGERS_FILE, read_triggers


@dataclass
class FFStudy:
    """The FF-memory study files beside a checkpoint (training/studies/ff_keys.py); None where not computed."""

    triggers: TriggerStore | None
    analysis: dict | None


def read_ff_study(folder: Path) -> FFStudy:
    """The study files in a checkpoint's folder, each None where absent."""
    triggers = TriggerStore(read_triggers(folder / TRIGGERS_FILE)) if (folder / TRIGGERS_FILE).exists() else None
    analysis = read_json_object(folder / ANALYSIS_FILE) if (folder / ANALYSIS_FILE).exists() else None
    return FFStudy(triggers, analysis)


def ff_bytes(entry: tuple[FFMemories, FFStudy]) -> int:
    """Bytes of a model's FF values and output embedding (copies of its weights) and its decoded trigger store."""
    memories, study = entry
    triggers = (
        [array for arrays in study.triggers.arrays.values() for array in arrays.values()] if study.triggers else []
    )
    return tensor_bytes(*memories.values.values(), memories.output_embedding, *triggers)
