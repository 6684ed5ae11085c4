"""The background worker: a loop over durable rows (uploads to ingest, receipts to send,
ad platforms to bring up to date).

It runs inside the server by default and as `partnerlink worker` processes at
scale. Each task claims its rows with an atomic UPDATE and a lease, so several
workers never do the same work and a crashed worker's row is picked up again.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from functools import partial

from sqlalchemy.orm import Session, sessionmaker

from partnerlink.audiences.tasks import refresh_stored_sizes
from partnerlink.customers.storage.configured import upload_storage
from partnerlink.customers.tasks import ingest_next_upload
from partnerlink.destinations.alerts.tasks import alert_destinations
from partnerlink.destinations.tasks import read_google_verdicts, sync_due_destinations
from partnerlink.idempotency.tasks import forget_expired_keys
from partnerlink.orders.reclassification import reclassify_customers
from partnerlink.orders.tasks import apply_when_gathered
from partnerlink.receipts.tasks import send_due_receipts
from partnerlink.settings import Settings
from partnerlink.webhooks.tasks import deliver_due_webhooks

log = logging.getLogger("partnerlink.worker")

# A task does a bounded amount of work and returns how many items it handled, or that and
# in how many seconds it wants to look again if it handled too few for a backlog (None:
# after the poll interval).
Task = Callable[[sessionmaker[Session], Settings], "int | tuple[int, float | None]"]

# A task's run that handled this many items (a full batch of receipts) leaves a backlog:
# its next run starts at once. Below it the task waits for the poll interval, so that under
# a steady stream of orders it sends receipts in batches rather than one transaction pair
# for every one or two (measured: the in-server worker's CPU share under load falls;
# bench/README.md).
BACKLOG_ITEMS = 100

# How often a worker looks for `.part` files left by a killed upload PUT (a directory walk).
PARTIAL_SWEEP_INTERVAL_SECONDS = 300.0


def registered_tasks() -> list[tuple[str, Task]]:
    # An upload that gives a customer a new email or phone re-classifies their orders
    # (CONTRACT.md §6): ad touches naming it match from then on.
    ingest = partial(ingest_next_upload, reclassify=reclassify_customers)
    return [
        # Orders acknowledged under load, applied first: their receipts are sent next.
        ("journaled orders", apply_when_gathered),
        ("customer uploads", ingest),
        ("e-receipts", send_due_receipts),
        ("webhooks", deliver_due_webhooks),
        ("ad platforms", sync_due_destinations),
        # What Google made of the audiences and sales sent (match rates), read until done.
        ("google verdicts", read_google_verdicts),
        # Emails to merchants whose destination needs them (once per change of state).
        ("ad alerts", alert_destinations),
        ("idempotency keys", forget_expired_keys),
        # Large profiles' audiences lists, counted again before they get stale.
        ("audience sizes", refresh_stored_sizes),
    ]


def partial_upload_age_seconds(settings: Settings) -> float:
    # The URL lifetime only bounds when a PUT may start, so never below 1 h of no writes.
    return float(max(settings.upload_url_ttl_seconds, 3600))


def sweep_partial_uploads(settings: Settings) -> int:
    """Deletes temporary upload files abandoned by a killed PUT; returns how many."""
    removed = upload_storage(settings).sweep_partial(partial_upload_age_seconds(settings))
    if removed:
        log.info("removed %d abandoned partial upload file(s)", removed)
    return removed


def run_once(sessions: sessionmaker[Session], settings: Settings) -> int:
    """Runs every task once; returns the number of items handled."""
    return sum(_run(name, task, sessions, settings)[0] for name, task in registered_tasks())


def _run(
    name: str, task: Task, sessions: sessionmaker[Session], settings: Settings
) -> tuple[int, float | None]:
    """The task's count and when it wants to look again (None: after the poll interval)."""
    try:
        result = task(sessions, settings)
    except Exception:
        log.exception("worker task %s failed; will retry", name)
        return 0, None
    return result if isinstance(result, tuple) else (result, None)


class BackgroundWorker:
    def __init__(self, sessions: sessionmaker[Session], settings: Settings) -> None:
        self.sessions = sessions
        self.settings = settings
        self._stop = threading.Event()
        self._next_sweep = 0.0  # time.monotonic() of the next partial-upload sweep: due at start
        self.tasks = registered_tasks()
        # time.monotonic() at which each task runs next: every one at start.
        self.next_run = dict.fromkeys((name for name, _ in self.tasks), 0.0)
        self._thread = threading.Thread(
            target=self.run_forever, name="partnerlink-worker", daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def sweep_if_due(self) -> int:
        """Sweeps abandoned partial uploads at start, then every few minutes; never raises."""
        now = time.monotonic()
        if now < self._next_sweep:
            return 0
        self._next_sweep = now + PARTIAL_SWEEP_INTERVAL_SECONDS
        try:
            return sweep_partial_uploads(self.settings)
        except Exception:
            log.exception("sweeping partial uploads failed; will retry")
            return 0

    def run_due(self) -> float:
        """Runs each task that is due; answers how long until the next one is.

        Each task keeps its own pace: one with a backlog runs again at once, one that
        found little waits the poll interval, or less if it asks (the journal, while orders
        gather: orders/tasks.apply_when_gathered). Under a stream of orders
        the journal and the receipts have a backlog round after round while the other
        tasks have none; running every task each round had made their polls (webhooks,
        uploads, ad platforms, ...) a third of the worker's CPU an order
        (bench/orders.py).
        """
        for name, task in self.tasks:
            if time.monotonic() < self.next_run[name]:
                continue
            handled, again = _run(name, task, self.sessions, self.settings)
            if handled >= BACKLOG_ITEMS:
                again = 0.0
            elif again is None:
                again = self.settings.worker_poll_seconds
            self.next_run[name] = time.monotonic() + again
        return max(0.0, min(self.next_run.values()) - time.monotonic())

    def run_forever(self) -> None:
        while not self._stop.is_set():
            self.sweep_if_due()
            wait = self.run_due()
            if wait > 0:
                self._stop.wait(wait)
