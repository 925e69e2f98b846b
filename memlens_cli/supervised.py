"""A child process kept running: `memlens serve --workers N` starts its `memlens worker` this way, so a job worker
that dies (killed, out of memory) is started again, and its job, requeued when its lease runs out, is finished
by the new one."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

FIRST_WAIT_SECONDS = 1.0  # before the first restart; doubled after each start that died within STEADY_SECONDS
LONGEST_WAIT_SECONDS = 60.0
STEADY_SECONDS = 30.0  # a process that ran this long before it died is restarted after FIRST_WAIT_SECONDS again


class SupervisedProcess:
    def __init__(self, command: list[str], name: str):
        self.command, self.name = command, name
        self.process: subprocess.Popen | None = None
        self.stopping = threading.Event()
        self.starting = threading.Lock()  # a restart and stop() one at a time: none starts after stop()
        self.watcher = threading.Thread(target=self._watch, name=f"supervise {name}", daemon=True)

    def start(self) -> None:
        self.process = subprocess.Popen(self.command)
        self.watcher.start()

    def _watch(self) -> None:
        wait = FIRST_WAIT_SECONDS
        while True:
            assert self.process is not None
            started = time.monotonic()
            code = self.process.wait()
            if self.stopping.is_set():
                return
            wait = FIRST_WAIT_SECONDS if time.monotonic() - started >= STEADY_SECONDS else wait
            print(f"{self.name} exited with {code}; starting it again in {wait:.0f} s", file=sys.stderr, flush=True)
            if self.stopping.wait(wait):
                return
            with self.starting:
                if self.stopping.is_set():
                    return
                self.process = subprocess.Popen(self.command)
            wait = min(2 * wait, LONGEST_WAIT_SECONDS)

    def stop(self) -> None:
        """Terminate the process (SIGTERM: a job worker gives its job back after the current batch) and wait."""
        with self.starting:
            self.stopping.set()
        if self.process is not None:
            self.process.terminate()
            self.process.wait()
        if self.watcher.is_alive():
            self.watcher.join()
