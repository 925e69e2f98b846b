"""Background jobs: translating an uploaded corpus (for a working-memory
model: its memory and the memory-content analyses), lesion sweeps, and
mining FF-key trigger examples over an uploaded or a server's corpus.

One worker thread runs jobs in order; each batch takes the gateway's
inference lock, so interactive requests still get their turn between
batches. Progress and results go to the JobStore. Jobs still queued when
the server stops run when it starts again; a job interrupted by a clean
stop goes back to the queue between two batches.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from functools import partial
from pathlib import Path

from app.schemas.validation import InputError, shown
from app.services.demo import demo_sentences
from app.services.gateway import ModelGateway
from app.services.gating import PageModel
from app.services.store import Job, JobStore
from app.services.uploads import Corpus
from inference.analyses.attention import attention_stacks
from inference.analyses.blocks import attention_blocks, merge_blocks
from inference.analyses.quality import corpus_quality
from inference.core.capabilities import Capability
from inference.core.family import capabilities_of, family_of
from inference.core.hook_names import EVERY_PATTERN
from inference.core.interventions import NO_INTERVENTIONS
from inference.core.loaded_model import LoadedModel
from inference.corpora.multi30k import DataError, read_multi30k
from inference.runs.lesion import lesion_sizes, quality_at_memory_size
from inference.runs.memory_corpus import generate_memory_corpus, summarise_memory_corpus
from inference.runs.trigger_mining import compact_triggers, mine_triggers

LOG = logging.getLogger(__name__)
TRACE_BATCH = 16
MEMORY_CHUNK = 64  # sentences a working-memory corpus job generates per hold of the model
MULTI30K_TEST = "multi30k_test_2016"  # reference set read from the data directory
MINED_TOP_K = 10  # trigger examples a mining job keeps per key (the stored studies keep 50)


def length_batches(lengths: list[int], size: int, mixed: bool) -> list[list[int]]:
    """Indices of sources to trace together, at most `size` a batch, in order of length (little padding);
    with `mixed` False, every batch holds sources of one length (a family that traces one length at a time)."""
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    one_length = [[i for i in order if lengths[i] == n] for n in dict.fromkeys(lengths[i] for i in order)]
    runs = [order] if mixed else one_length
    return [run[start : start + size] for run in runs for start in range(0, len(run), size)]


class JobInterrupted(Exception):
    """The server is stopping: the job goes back to the queue."""


class JobRunner:
    def __init__(self, store: JobStore, gateway: ModelGateway, data_dir: Path):
        self.store = store
        self.gateway = gateway
        self.data_dir = data_dir
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memlens-job")
        self._stopping = threading.Event()
        for job in store.queued():
            self._pool.submit(self._run, job.id, self._work[job.kind])

    @property
    def _work(self) -> dict:
        return {"corpus": self._corpus, "sweep": self._sweep, "mining": self._mining}

    def shutdown(self) -> None:
        """Stop after the current batch; the interrupted job goes back to the queue."""
        self._stopping.set()
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _progress(self, job_id: str, done: int) -> None:
        """Record progress; between two batches is where a stopping server leaves a job."""
        self.store.update(job_id, done=done)
        if self._stopping.is_set():
            raise JobInterrupted()

    def submit_corpus(self, model: PageModel, corpus: Corpus) -> Job:
        """Translate (or, for a working-memory model, read the memory of) every line of `corpus` in the background."""
        loaded = model.loaded
        for number, source in enumerate(corpus.sources, start=1):
            try:
                self.gateway.check_text(loaded, source)
            except InputError as error:
                raise InputError(f"{corpus.filename}, line {number}: {error}") from None
        params = {
            "model": model.name,
            "filename": corpus.filename,
            "sources": corpus.sources,
            "references": corpus.references,
        }
        job = self.store.create("corpus", params, total=len(corpus.sources))
        self._pool.submit(self._run, job.id, self._work["corpus"])
        return job

    def submit_sweep(self, model: PageModel, reference: str) -> Job:
        """BLEU against inference memory size on a reference set: "demo",
        "multi30k_test_2016" (from the data directory) or the id of an
        uploaded .tsv corpus. A finished identical sweep is reused."""
        loaded = model.loaded
        self.reference_set(reference)  # refuse an unusable reference before queueing
        params = {
            "model": model.name,
            "reference": reference,
            "sizes": lesion_sizes(loaded.config.memory_size, loaded.config.max_memory_size),
        }
        cached = self.store.find_done("sweep", params)
        if cached:
            return cached
        job = self.store.create("sweep", params, total=len(params["sizes"]))
        self._pool.submit(self._run, job.id, self._work["sweep"])
        return job

    def submit_mining(self, model: PageModel, label: str, sources: list[str], references: list[str] | None) -> Job:
        """Mine the trigger examples of every FF key of `model` over a corpus in the background: a text generator
        reads each text (the references of a pair corpus, where English is; else the lines), a translator is
        teacher-forced on each reference after its source."""
        translates = model.can(Capability.TRANSLATES)
        if translates and references is None:
            raise InputError(
                f"{label}: a translator's decoder is mined on pairs: upload a .tsv (source<TAB>translation)"
            )
        texts = references if references is not None else sources
        for number, text in enumerate(texts, start=1):
            try:
                self.gateway.check_text(model.loaded, text)
            except InputError as error:
                raise InputError(f"{label}, line {number}: {error}") from None
        params = {
            "model": model.name,
            "filename": label,
            "sources": sources if translates else texts,
            "references": references if translates else None,
            "top_k": MINED_TOP_K,
        }
        job = self.store.create("mining", params, total=len(texts))
        self._pool.submit(self._run, job.id, self._work["mining"])
        return job

    def reference_set(self, reference: str) -> tuple[list[str], list[str]]:
        if reference == "demo":
            demos = demo_sentences()
            return [d.source for d in demos], [d.reference for d in demos]
        if reference == MULTI30K_TEST:
            try:
                pairs = read_multi30k(self.data_dir, "test_2016_flickr")
            except DataError:  # its message names the server's own paths
                raise InputError(
                    "the Multi30k test set is not in the server's data directory: "
                    "choose the demo set, or ask the server's owner to run `memlens data fetch multi30k`"
                ) from None
            return [de for de, _ in pairs], [en for _, en in pairs]
        job = self.store.get(reference)
        if job is None or job.kind != "corpus":
            raise InputError(f"no uploaded corpus {shown(reference)}")
        if not job.params.get("references"):
            raise InputError(f"corpus {reference} has no references: upload a .tsv (source<TAB>reference)")
        return job.params["sources"], job.params["references"]

    def _run(self, job_id: str, work) -> None:
        if self._stopping.is_set():
            return  # still queued: it runs when the server starts again
        job = self.store.get(job_id)
        if job is None:  # removed from the store while it waited
            return
        self.store.update(job_id, status="running")
        try:
            result = work(job)
        except JobInterrupted:
            self.store.update(job_id, status="queued", done=0)
            return
        except InputError as error:
            self.store.update(job_id, status="failed", error=str(error))
            return
        except Exception as error:  # reported on the job's page without the server's details, which go to its log
            LOG.exception("job %s failed", job_id)
            self.store.update(
                job_id,
                status="failed",
                error=f"the job failed on the server ({type(error).__name__}); its log has the details",
            )
            return
        self.store.update(job_id, status="done", done=job.total, result=result)

    def _corpus(self, job: Job) -> dict:
        model, sources, references = job.params["model"], job.params["sources"], job.params["references"]
        loaded = self.gateway.model(model)
        if Capability.WORKING_MEMORY in capabilities_of(loaded.config):
            return self._memory_corpus(job, loaded, sources, references)
        lengths = [len(loaded.tokenizer.encode(source)) for source in sources]
        mixed = family_of(loaded.config.family).traces_mixed_lengths
        patterns = [EVERY_PATTERN] if attention_stacks(loaded.model) else []  # a state model has no attention
        translations: list[str] = [""] * len(sources)
        blocks, done = [], 0
        for batch in length_batches(lengths, TRACE_BATCH, mixed):
            trace = self.gateway.trace_many(loaded, [sources[i] for i in batch], patterns, NO_INTERVENTIONS)
            for i, output in zip(batch, trace.outputs):
                translations[i] = output
            blocks.append(attention_blocks(trace))
            done += len(batch)
            self._progress(job.id, done)
        quality = asdict(corpus_quality(translations, references)) if references else None
        return {"translations": translations, "quality": quality, "blocks": [asdict(b) for b in merge_blocks(blocks)]}

    def _memory_corpus(self, job: Job, loaded: LoadedModel, sources: list[str], references: list[str] | None) -> dict:
        """Memory and translations chunk by chunk (interactive requests get the
        model in between), then the memory-content analyses and BLEU lesions."""
        runs = []
        for start in range(0, len(sources), MEMORY_CHUNK):
            with self.gateway.turn():
                runs.append(
                    generate_memory_corpus(loaded, sources[start : start + MEMORY_CHUNK], with_lesions=bool(references))
                )
            self._progress(job.id, min(start + MEMORY_CHUNK, len(sources)))
        return {"memory_decisions": True, **summarise_memory_corpus(runs, references or None)}

    def _mining(self, job: Job) -> dict:
        """The running top-k of every key, batch by batch (interactive requests get the model in between), then the
        compact record the FF page reads (inference.runs.trigger_mining)."""
        loaded = self.gateway.model(job.params["model"])
        sources, references = job.params["sources"], job.params["references"]
        texts, pair_sources = (sources, None) if references is None else (references, sources)
        state = None
        for end in range(TRACE_BATCH, len(texts) + TRACE_BATCH, TRACE_BATCH):
            batch = partial(
                mine_triggers,
                loaded,
                texts[:end],
                None if pair_sources is None else pair_sources[:end],
                state,
                batch_size=TRACE_BATCH,
                top_k=job.params["top_k"],
            )
            state = self.gateway.exclusive(batch)
            self._progress(job.id, min(end, len(texts)))
        assert state is not None  # a corpus holds at least one line
        record = self.gateway.exclusive(partial(compact_triggers, state, loaded, texts))
        return {"triggers": record, "sentences": len(texts), "layers": list(state.coefficients)}

    def _sweep(self, job: Job) -> dict:
        loaded = self.gateway.model(job.params["model"])
        sources, references = self.reference_set(job.params["reference"])
        bleu, chrf = [], []
        for size in job.params["sizes"]:
            with self.gateway.turn():
                quality = quality_at_memory_size(loaded.model, loaded.tokenizer, sources, references, size)
            bleu.append(quality.bleu)
            chrf.append(quality.chrf)
            self._progress(job.id, len(bleu))
        return {
            "memory_size": job.params["sizes"],
            "bleu": bleu,
            "chrf": chrf,
            "trained": loaded.config.memory_size,
            "sentences": len(sources),
        }
