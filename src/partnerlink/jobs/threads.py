"""A fixed pool of threads for claimed jobs whose work waits on a peer (a webhook
receiver, an ad platform).

The worker loop asks how many threads are idle and claims only that many rows, so a
claimed row never waits in a queue while its lease runs out, and a slow peer holds one
thread, never the loop. Threads start on first use.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any, TypeVar

T = TypeVar("T")


class JobThreads:
    def __init__(self, threads: int, *, name: str) -> None:
        self.threads = threads
        self.name = name
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None
        self._in_flight: set[Future[Any]] = set()

    def idle(self) -> int:
        """How many more jobs may start now."""
        with self._lock:
            return self.threads - len(self._in_flight)

    def start(self, work: Callable[..., T], *args: Any) -> Future[T]:
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(
                    max_workers=self.threads, thread_name_prefix=self.name
                )
            future = self._executor.submit(work, *args)
            self._in_flight.add(future)
        future.add_done_callback(self._forget)
        return future

    def wait(self, timeout: float) -> None:
        """Until every job started so far has ended (tests, the CLI, a worker stopping)."""
        with self._lock:
            pending = set(self._in_flight)
        wait(pending, timeout=timeout)

    def _forget(self, future: Future[Any]) -> None:
        with self._lock:
            self._in_flight.discard(future)
