"""Background jobs: translating an uploaded corpus (for a working-memory
model: its memory and the memory-content analyses), lesion sweeps, and
mining FF-key trigger examples over an uploaded or a server's corpus.

A web process queues them in the shared store (app/services/store.py); job
workers (app/services/worker.py) claim and run them: a thread of this
process when it runs jobs itself (a single server, the default), else
`memlens worker` processes. Each batch takes the gateway's inference lock,
so interactive requests on the same process still get their turn between
batches; progress and results go to the store.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

from app.schemas.validation import InputError, shown
from app.services.demo import demo_sentences
from app.services.gateway import ModelGateway
from app.services.gating import PageModel
from app.services.store import Job, JobStore
from app.services.uploads import Corpus
from app.services.worker import JobWorker, Progress, Work
from inference.analyses.ff_values import ff_memories
from inference.core.capabilities import Capability
from inference.core.family import LoadedModel, capabilities_of
from inference.corpora.multi30k import DataError, read_multi30k
from inference.corpus_jobs.job import CorpusJob, run_in_process
from inference.corpus_jobs.states import memory_job, mining_job, sweep_job, translation_job
from inference.runs.lesion import lesion_sizes
from inference.runs.trigger_mining import compact_triggers

MULTI30K_TEST = "multi30k_test_2016"  # reference set read from the data directory
MINED_TOP_K = 10  # trigger examples a mining job keeps per key (the stored studies keep 50)


class JobRunner:
    def __init__(
        self, store: JobStore, gateway: ModelGateway, data_dir: Path, run_jobs: bool = True, ray_workers: int = 0
    ):
        """Queues jobs in `store`; with `run_jobs`, a worker thread of this process runs them (else
        `memlens worker` processes do). With `ray_workers`, the jobs this process runs are sharded over that many
        Ray actors (inference.corpus_jobs.ray_executor), Ray started at the first job."""
        self.store = store
        self.gateway = gateway
        self.data_dir = data_dir
        self.ray_workers = ray_workers
        self.worker = JobWorker(store, self.work) if run_jobs else None
        if self.worker is not None:
            self.worker.start()

    def work(self, kind: str) -> Work:
        """What runs a job of `kind`."""
        return {"corpus": self._corpus, "sweep": self._sweep, "mining": self._mining}[kind]

    def shutdown(self) -> None:
        """Stop this process's worker; the job it runs goes back to the queue at once (the server is stopping
        within seconds; the run, on its thread, stops at its next batch and writes nothing)."""
        if self.worker is not None:
            self.worker.stop()
            self.worker.give_back()

    def _queued(self, job: Job) -> Job:
        if self.worker is not None:
            self.worker.wake()
        return job

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
        return self._queued(self.store.create("corpus", params, total=len(corpus.sources)))

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
        return self._queued(self.store.create("sweep", params, total=len(params["sizes"])))

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
        return self._queued(self.store.create("mining", params, total=len(texts)))

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

    def _run(self, corpus_job: CorpusJob, loaded: LoadedModel, job: Job, progress: Progress) -> Any:
        """The corpus job's result: sharded over Ray actors where this process has them, else its batches run here
        in order, each in the model's turn (interactive requests get the model between batches); progress in the
        job's own units."""
        if self.ray_workers:
            return self._run_on_ray(corpus_job, job, progress)
        batches = len(corpus_job.batches)
        return run_in_process(
            corpus_job, loaded, lambda n: progress(job.total * n // batches), hold=self.gateway.exclusive
        )

    def _run_on_ray(self, corpus_job: CorpusJob, job: Job, progress: Progress) -> Any:
        """The corpus job sharded over Ray actors that load the job's model from its folder, one per worker."""
        from inference.corpus_jobs.ray_executor import RayExecutor, start_ray

        start_ray()
        folder = self.gateway.registry.entries[job.params["model"]].path
        executor = RayExecutor(folder, self.ray_workers, on_gpus=self.gateway.registry.device.type == "cuda")
        done = [0]  # the job's units, as the last merged shard left them

        def merged(shards_merged: int, shards: int) -> None:
            done[0] = job.total * shards_merged // shards
            progress(done[0])

        try:
            return executor.run(corpus_job, merged, tick=lambda: progress(done[0]))  # a tick may stop the job
        finally:
            executor.close()

    def _corpus(self, job: Job, progress: Progress) -> dict:
        """Translations, BLEU and attention blocks of an uploaded corpus; for a working-memory model its memory,
        the memory-content analyses and BLEU under the memory lesions."""
        model, sources, references = job.params["model"], job.params["sources"], job.params["references"]
        loaded = self.gateway.model(model)
        if Capability.WORKING_MEMORY in capabilities_of(loaded.config):
            result = self._run(memory_job(sources, references or None), loaded, job, progress)
            return {"memory_decisions": True, **result}
        mixed = loaded.family.traces_mixed_lengths
        corpus_job = translation_job(loaded, sources, references, mixed, self.gateway.limits.max_new_tokens)
        return self._run(corpus_job, loaded, job, progress)

    def _mining(self, job: Job, progress: Progress) -> dict:
        """The top-k trigger examples of every key (inference.corpus_jobs.states.mining_job), then the compact
        record the FF page reads (inference.runs.trigger_mining)."""
        loaded = self.gateway.model(job.params["model"])
        sources, references = job.params["sources"], job.params["references"]
        texts, pair_sources = (sources, None) if references is None else (references, sources)
        layers = ff_memories(loaded.model).layers
        state = self._run(mining_job(texts, pair_sources, job.params["top_k"], layers), loaded, job, progress)
        record = self.gateway.exclusive(partial(compact_triggers, state, loaded, texts))
        return {"triggers": record, "sentences": len(texts), "layers": list(state.coefficients)}

    def _sweep(self, job: Job, progress: Progress) -> dict:
        """BLEU and chrF at every memory size of the sweep (inference.corpus_jobs.states.sweep_job)."""
        loaded = self.gateway.model(job.params["model"])
        sources, references = self.reference_set(job.params["reference"])
        result = self._run(sweep_job(loaded, sources, references, job.params["sizes"]), loaded, job, progress)
        return {**result, "trained": loaded.config.memory_size, "sentences": len(sources)}
