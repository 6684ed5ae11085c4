"""The background worker: a loop over durable rows (uploads to ingest, receipts to send).

It runs inside the server by default and as `partnerlink worker` processes at
scale. Each task claims its rows with an atomic UPDATE and a lease, so several
workers never do the same work and a crashed worker's row is picked up again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from sqlalchemy.orm import Session, sessionmaker

from partnerlink.settings import Settings

log = logging.getLogger("partnerlink.worker")

# A task does a bounded amount of work and returns how many items it handled.
Task = Callable[[sessionmaker[Session], Settings], int]


def registered_tasks() -> list[tuple[str, Task]]:
    from partnerlink.customers.tasks import ingest_next_upload
    from partnerlink.receipts.tasks import send_due_receipts

    return [("customer uploads", ingest_next_upload), ("e-receipts", send_due_receipts)]


def run_once(sessions: sessionmaker[Session], settings: Settings) -> int:
    """Runs every task once; returns the number of items handled."""
    handled = 0
    for name, task in registered_tasks():
        try:
            handled += task(sessions, settings)
        except Exception:
            log.exception("worker task %s failed; will retry", name)
    return handled


class BackgroundWorker:
    def __init__(self, sessions: sessionmaker[Session], settings: Settings) -> None:
        self.sessions = sessions
        self.settings = settings
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self.run_forever, name="partnerlink-worker", daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def run_forever(self) -> None:
        while not self._stop.is_set():
            handled = run_once(self.sessions, self.settings)
            if handled == 0:
                self._stop.wait(self.settings.worker_poll_seconds)
