"""The worker task that keeps every destination up to date (CONTRACT.md §11).

Each run claims the destinations that are due (their PARTNERLINK_AD_SYNC_SECONDS came,
a retry's backoff ran out, or a sync was asked for), as many as the pool has idle
threads, with a lease (partnerlink.jobs), and syncs each on a thread of its own: a
platform that hangs holds one thread for at most the HTTP client's timeouts, and the
other destinations go on. The worker loop itself never waits for a platform.

Once an hour the task also deletes the run history older than 90 days (runs.py): one
indexed DELETE, a few rows.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import datetime

import httpx
from sqlalchemy.orm import Session, sessionmaker

from partnerlink import jobs
from partnerlink.db import replica
from partnerlink.db.base import utcnow
from partnerlink.destinations import queries, runs, verdicts
from partnerlink.destinations.platform import platform_client
from partnerlink.destinations.sync.engine import SyncResult, sync_destination
from partnerlink.destinations.sync.progress import LEASE_SECONDS
from partnerlink.settings import Settings

log = logging.getLogger("partnerlink.destinations")

POOL_THREADS = 4

_threads = jobs.JobThreads(POOL_THREADS, name="ad-sync")
_lock = threading.Lock()
_http: dict[float, httpx.Client] = {}
FORGET_RUNS_SECONDS = 3600.0
_forget_runs_at = [0.0]  # time.monotonic() of this process's next deletion of old runs


def _http_client(settings: Settings) -> httpx.Client:
    """One HTTP client (its connection pool) per timeout, shared by the syncs."""
    timeout = settings.ad_request_timeout_seconds
    with _lock:
        if timeout not in _http:
            _http[timeout] = platform_client(
                connect_seconds=min(5.0, timeout), request_seconds=timeout
            )
        return _http[timeout]


def _sync_logged(
    sessions: sessionmaker[Session], settings: Settings, destination_id: str, lease: datetime
) -> SyncResult:
    outcome = sync_destination(
        sessions,
        settings,
        destination_id,
        lease,
        _http_client(settings),
        replica.read_sessions(settings),
    )
    log.info("destination %s: %s", destination_id, outcome.result)
    return outcome


def sync_due_destinations(sessions: sessionmaker[Session], settings: Settings) -> int:
    """Claims due destinations and starts their syncs; answers how many it started."""
    forget_old_runs_hourly(sessions)
    idle = _threads.idle()
    if idle <= 0:
        return 0
    with sessions.begin() as session:
        claimed = queries.claim(session, now=utcnow(), limit=idle, lease_seconds=LEASE_SECONDS)
    for row in claimed:
        _threads.start(_sync_logged, sessions, settings, row.id, row.lease_until)
    return len(claimed)


def forget_old_runs_hourly(sessions: sessionmaker[Session]) -> None:
    """Deletes the runs older than 90 days, once an hour per worker process."""
    now = time.monotonic()
    with _lock:
        if now < _forget_runs_at[0]:
            return
        _forget_runs_at[0] = now + FORGET_RUNS_SECONDS
    try:
        forgotten = runs.forget_old_runs(sessions)
    except Exception:
        log.exception("deleting old run history failed; will retry within the hour")
        return
    if forgotten:
        log.info("run history: %d run(s) older than %d days deleted", forgotten, runs.KEEP_DAYS)


def read_google_verdicts(sessions: sessionmaker[Session], settings: Settings) -> int:
    """Google's verdicts on the requests the syncs sent (CONTRACT §15): verdicts.py
    claims the checks due and reads them on threads of their own."""
    return verdicts.read_verdicts(sessions, settings)


def wait_for_syncs(timeout: float = 120.0) -> None:
    """Waits until every started sync has recorded its outcome (tests, the CLI)."""
    _threads.wait(timeout)


def sync_now(
    sessions: sessionmaker[Session], settings: Settings, destination_id: str
) -> SyncResult:
    """Syncs one destination in this thread (the operator's `destinations sync ID`); one
    a worker is syncing right now answers `busy`."""
    with sessions.begin() as session:
        row = queries.claim_one(
            session, destination_id=destination_id, now=utcnow(), lease_seconds=LEASE_SECONDS
        )
    if row is None:
        return SyncResult(destination_id, "busy")
    return sync_destination(
        sessions,
        settings,
        destination_id,
        row.lease_until,
        _http_client(settings),
        replica.read_sessions(settings),
        trigger=runs.REQUEST,
    )
