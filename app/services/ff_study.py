"""The FF-memory study files beside a checkpoint, and the trigger examples a mining job found, read and cached for
the FF memories page and its API."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

from app.schemas.validation import InputError, shown
from app.services.gating import PageModel
from app.services.store import Job, JobStore
from inference.analyses.ff_mining import TriggerStore
from inference.analyses.ff_values import ff_memories
from inference.core.byte_cache import ByteBudgetCache, tensor_bytes
from inference.core.checkpoint import read_json_object
from inference.core.ff_memories import FFMemories
from inference.corpora.ff_study_files import ANALYSIS_FILE, TRIGGERS_FILE, read_triggers

FF_STUDY_BYTES = 512 * 2**20  # the language model's values, embedding and triggers are about 70 MB


@dataclass
class FFStudy:
    """The FF-memory study files beside a checkpoint (training/studies/ff_keys.py); None where not computed."""

    triggers: TriggerStore | None
    analysis: dict | None


def study_command(folder: Path) -> str:
    """The command that computes a model's FF study, naming its folder as the server was started with it (relative
    to the server's working folder; a folder elsewhere by its name inside its models folder, no server path)."""
    try:
        named = folder.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        named = f"<its models folder>/{folder.name}"
    return f"python -m training ff-memories {named}"


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


class FFStudies:
    """Each model's FF memories (values and output embedding, copied from its weights) and its stored study,
    read once and kept within a byte budget."""

    def __init__(self, budget_bytes: int = FF_STUDY_BYTES):
        self._cache: ByteBudgetCache[tuple[FFMemories, FFStudy]] = ByteBudgetCache(budget_bytes, ff_bytes)
        self._lock = threading.Lock()  # one reading of a study at a time

    def of(self, model: PageModel, mined: Job | None = None) -> tuple[FFMemories, FFStudy]:
        """The model's FF memories and its stored study; with `mined` (a finished mining job of the model, from
        `mining_job`), that job's trigger examples instead of the stored ones (and no stored analysis)."""
        with self._lock:
            key = model.name if mined is None else f"{model.name} mined {mined.id}"
            found = self._cache.get(key)
            if found is None:
                found = (
                    ff_memories(model.loaded.model),
                    read_ff_study(model.folder) if mined is None else mined_study(mined),
                )
                self._cache.put(key, found)
            return found


def mined_study(job: Job) -> FFStudy:
    """A finished mining job's trigger examples, as a stored study without its analysis."""
    if job.result is None:
        raise InputError(f"mining job {job.id} has no result")
    return FFStudy(TriggerStore(job.result["triggers"]), None)


def mining_job(store: JobStore, model: PageModel, job_id: str) -> Job:
    """The finished mining job `job_id` of `model`; an InputError saying why it cannot be read otherwise."""
    job = store.get(job_id)
    if job is None or job.kind != "mining":
        raise InputError(f"no trigger mining job {shown(job_id)}")
    if job.params["model"] != model.name:
        raise InputError(f"mining job {job_id} mined {job.params['model']}, not {model.name}")
    if job.status != "done" or job.result is None:
        raise InputError(f"mining job {job_id} is {job.status}: its triggers are read once it is done")
    return job


def ff_layer(memories: FFMemories, layer: int) -> str:
    """FF layer index -> module name, or an InputError."""
    if not 0 <= layer < len(memories.layers):
        raise InputError(f"layer {layer} is out of range (0 to {len(memories.layers) - 1})")
    return memories.layers[layer]
