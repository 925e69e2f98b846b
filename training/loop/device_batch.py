"""One batch of training runs side by side on one machine (a lent GPU), ended by a hard deadline,
with what finished packed into a few archives small enough to be copied back.

A job is a training config, optionally under another seed (`CONFIG@K`). Each job trains into
`<work>/out/<name>` (its resumable state in `<work>/runs/<name>`), then, still on the machine:
a shipped run (no seed) stores its weights in float16 and re-measures its metrics on them
(`store-half`) and stores its test outputs (`outputs`); a seed run stores its outputs only, since
its weights are not shipped. At the deadline the jobs still running are stopped; their resumable
state stays in the work folder, and a later batch of the same configs with the same work folder
resumes them. The archives: `checkpoints_<i>.tar`, each under the size limit, holding the finished
checkpoint folders (seed runs without weights and tokenizer; a folder larger than the limit, or one
past the last archive allowed, is left out); then, in the archives still allowed, each stopped run's
resumable folder cut into pieces `resume_<name>.tar.<k>` (the runs with the most epochs done first;
one that does not fit in what is left is skipped); and `records.tar.gz` with every job's log and
`batch.json` (per job: the exit status, the epochs done, the seconds it ran, and what was packed:
"checkpoint", "state", or "nothing: <why>")."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inference.core.places import REPO_ROOT

POLL_SECONDS = 5.0
NOT_SHIPPED = ("model.safetensors", "tokenizer.json")  # a seed run's weights stay on the machine
EPOCH_LOGGED = re.compile(r"epoch (\d+): train loss")
STOPPED = "stopped at the deadline"
TOO_LARGE = "nothing: larger than one archive, or no archive left"
TAR_CLOSING_BYTES = 2 * tarfile.BLOCKSIZE + tarfile.RECORDSIZE  # end-of-archive blocks, then at most a record's padding


class BatchError(ValueError):
    """A job spec or a limit the user can fix."""


@dataclass(frozen=True)
class Job:
    config: Path
    seed: int | None  # None: the config's own seed, a run to ship

    @property
    def name(self) -> str:
        stem = self.config.stem
        return stem if self.seed is None else f"{stem}_seed{self.seed}"


def parse_job(spec: str) -> Job:
    """'training/configs/x.json' or 'training/configs/x.json@2' (seed 2)."""
    path, _, seed = spec.partition("@")
    if not Path(path).is_file():
        raise BatchError(f"{spec}: no config file at {path}")
    if seed and not (seed.isdigit() and int(seed) > 0):
        raise BatchError(f"{spec}: the seed after @ must be a positive integer")
    return Job(Path(path), int(seed) if seed else None)


def job_commands(job: Job, work: Path, options: list[str]) -> list[list[str]]:
    """The commands of one job, run one after the other; `options` (--data-dir, --device) go to each."""
    out, run = work.resolve() / "out" / job.name, work.resolve() / "runs" / job.name
    training = [sys.executable, "-m", "training"]
    seed = [] if job.seed is None else ["--seed", str(job.seed)]
    train = [*training, "train", str(job.config.resolve()), "--out", str(out), "--run-dir", str(run), *seed, *options]
    outputs = [*training, "outputs", str(out), *options]
    if job.seed is not None:
        return [train, outputs]
    return [train, [*training, "store-half", str(out), *options], outputs]


def epochs_done(log: Path) -> int:
    """The last epoch the job's training log reports done (0 before the first)."""
    found = EPOCH_LOGGED.findall(log.read_text(errors="replace")) if log.exists() else []
    return int(found[-1]) if found else 0


def pack_groups(sizes: dict[str, int], limit: int, archives: int) -> tuple[list[list[str]], list[str]]:
    """Folders (name -> bytes) grouped in order into at most `archives` archives of at most `limit`
    bytes each, and the folders left out (too large alone, or no archive left)."""
    groups: list[list[str]] = []
    left_out: list[str] = []
    total = limit + 1  # the first folder that fits opens an archive
    for name, size in sizes.items():
        if size > limit or (total + size > limit and len(groups) == archives):
            left_out.append(name)
            continue
        if total + size > limit:
            groups.append([])
            total = 0
        groups[-1].append(name)
        total += size
    return groups, left_out


def packed_files(folder: Path, seed_run: bool) -> list[Path]:
    return sorted(f for f in folder.iterdir() if f.is_file() and not (seed_run and f.name in NOT_SHIPPED))


def launch(jobs: list[Job], work: Path, options: list[str], logs: Path) -> dict[str, subprocess.Popen]:
    """Each job's commands in a shell of its own session (stopped as a whole at the deadline)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TQDM_DISABLE": "1", "PYTHONUNBUFFERED": "1"}
    running = {}
    for job in jobs:
        script = " && ".join(shlex.join(command) for command in job_commands(job, work, options))
        with open(logs / f"{job.name}.log", "w") as log:
            running[job.name] = subprocess.Popen(
                ["bash", "-c", script],
                cwd=REPO_ROOT,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
    return running


def wait_or_stop(running: dict[str, subprocess.Popen], deadline_s: float) -> dict[str, float]:
    """Seconds each job took, for those that ended by `deadline_s`; the others are killed then."""
    start = time.monotonic()
    ended: dict[str, float] = {}
    while True:
        for name, process in running.items():
            if name not in ended and process.poll() is not None:
                ended[name] = round(time.monotonic() - start, 1)
        left = deadline_s - (time.monotonic() - start)
        if len(ended) == len(running) or left <= 0:
            break
        time.sleep(min(POLL_SECONDS, left))
    for name, process in running.items():
        if name not in ended:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    return ended


def tar_member_bytes(file: Path) -> int:
    """What a file takes in a tar archive: its 512-byte header and its data in 512-byte blocks."""
    return tarfile.BLOCKSIZE + -(-file.stat().st_size // tarfile.BLOCKSIZE) * tarfile.BLOCKSIZE


def pack_finished(
    finished: dict[str, Job], out: Path, pack: Path, limit_bytes: int, archives: int
) -> tuple[int, list[str]]:
    """Tar the finished checkpoint folders into `pack`; returns the archives written and the folders left out."""
    sizes = {
        name: sum(tar_member_bytes(f) for f in packed_files(out / name, job.seed is not None))
        for name, job in finished.items()
    }
    groups, left_out = pack_groups(sizes, limit_bytes - TAR_CLOSING_BYTES, archives)
    for i, group in enumerate(groups):
        with tarfile.open(pack / f"checkpoints_{i}.tar", "w") as tar:
            for name in group:
                for file in packed_files(out / name, finished[name].seed is not None):
                    tar.add(file, arcname=f"{name}/{file.name}")
    return len(groups), left_out


def pack_stopped(stopped: list[str], runs: Path, pack: Path, limit_bytes: int, pieces_left: int) -> dict[str, str]:
    """Each stopped run's resumable folder under `runs` (state, best weights so far, config, tokenizer,
    log) as one tar cut into pieces `resume_<name>.tar.000`, `.001`, ... of at most `limit_bytes`, in
    the order given, first fit: a run whose pieces outnumber the `pieces_left` is skipped and a later,
    smaller one may still go. Returns what was packed of each run ("state" or "nothing: <why>").
    Joined again (`cat resume_<name>.tar.* | tar -xf -`) the pieces give the folder `<name>`, which
    `train --run-dir` resumes."""
    packed = {}
    for name in stopped:
        folder = runs / name
        if not (folder / "state.pt").exists():
            packed[name] = "nothing: stopped before its first saved state"
            continue
        if pieces_left == 0:
            packed[name] = "nothing: no archive left"
            continue
        whole = runs / f"{name}.tar"
        try:
            with tarfile.open(whole, "w") as tar:
                for file in sorted(folder.iterdir()):
                    if file.is_file() and not file.name.endswith(".partial"):  # .partial: a save cut short
                        tar.add(file, arcname=f"{name}/{file.name}")
            n_pieces = -(-whole.stat().st_size // limit_bytes)
            if n_pieces <= pieces_left:
                cut_into_pieces(whole, pack / f"resume_{name}.tar", limit_bytes)
                pieces_left -= n_pieces
                packed[name] = "state"
            else:
                packed[name] = f"nothing: its {n_pieces} pieces outnumber the {pieces_left} archives left"
        finally:
            whole.unlink(missing_ok=True)
    return packed


def cut_into_pieces(file: Path, stem: Path, limit_bytes: int) -> None:
    """`file` as `<stem>.000`, `<stem>.001`, ... of at most `limit_bytes` each."""
    with open(file, "rb") as source:
        for i, piece in enumerate(iter(lambda: source.read(limit_bytes), b"")):
            stem.with_name(f"{stem.name}.{i:03d}").write_bytes(piece)


def run_batch(
    jobs: list[Job], work: Path, pack: Path, deadline_s: float, options: list[str], limit_bytes: int, archives: int
) -> dict[str, dict]:
    """Run `jobs` side by side until they end or `deadline_s` passes; pack what finished into `pack`."""
    if len({job.name for job in jobs}) != len(jobs):
        raise BatchError("a job is named twice")
    logs = work / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    pack.mkdir(parents=True, exist_ok=True)
    running = launch(jobs, work, options, logs)
    ended = wait_or_stop(running, deadline_s)
    report: dict[str, dict[str, Any]] = {
        job.name: {
            "status": running[job.name].returncode if job.name in ended else STOPPED,
            "epochs_done": epochs_done(work / "runs" / job.name / "train.log"),  # over every batch that ran it
            "seconds": ended.get(job.name, deadline_s),
            "packed": "nothing: the run failed",
        }
        for job in jobs
    }
    finished = {job.name: job for job in jobs if report[job.name]["status"] == 0}
    written, left_out = pack_finished(finished, work / "out", pack, limit_bytes, archives)
    for name in finished:
        report[name]["packed"] = (
            "nothing: larger than one archive, or no archive left" if name in left_out else "checkpoint"
        )
    stopped = [name for name, run in report.items() if run["status"] == STOPPED]
    stopped.sort(key=lambda name: -report[name]["epochs_done"])
    for name, packed in pack_stopped(stopped, work / "runs", pack, limit_bytes, archives - written).items():
        report[name]["packed"] = packed
    (logs / "batch.json").write_text(json.dumps(report, indent=1))
    with tarfile.open(pack / "records.tar.gz", "w:gz") as tar:
        tar.add(logs, arcname="logs")
    return report
