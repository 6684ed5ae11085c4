"""The worker's reads on the hot standby (`PARTNERLINK_DATABASE_READ_URL`), once it has
replayed what the primary held when the work began; else the primary.

A task that reads and then writes what it derived (an ad-platform sync, a stored
audience count) must not read older data than the primary held when it started: the
primary's WAL position is read first, and the standby is used only once its replay
reached it (waiting a few seconds at most). Every snapshot taken on the standby from
then on includes every transaction committed on the primary before that moment.
Not caught up in time, not in recovery, or not answering: the primary, as without the
setting. See destinations/sync/engine.py and audiences/stored_sizes.py for each task's rule.
"""

from __future__ import annotations

import logging
import threading
import time

from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from partnerlink.db.engine import make_engine, make_sessionmaker
from partnerlink.settings import Settings

log = logging.getLogger("partnerlink.db")

CATCH_UP_SECONDS = 3.0
POLL_SECONDS = 0.05
# The worker's pool of standby connections, shared by its syncs (4 threads, 2 sessions
# each at most) and its audience-size count (one thread).
POOL_SIZE = 10

_lock = threading.Lock()
_replicas: dict[str, sessionmaker[Session]] = {}


def read_sessions(settings: Settings) -> sessionmaker[Session] | None:
    """The read replica's sessions (one engine per URL, shared by the worker's tasks),
    when `PARTNERLINK_DATABASE_READ_URL` names one and both databases are PostgreSQL."""
    url = settings.database_read_url
    if not url or not all(
        make_url(u).get_backend_name() == "postgresql" for u in (url, settings.database_url)
    ):
        return None
    with _lock:
        if url not in _replicas:
            _replicas[url] = make_sessionmaker(make_engine(url, pool_size=POOL_SIZE))
        return _replicas[url]


def primary_position(session: Session) -> str | None:
    """The primary's current WAL position; None off PostgreSQL."""
    if session.get_bind().dialect.name != "postgresql":
        return None
    return str(session.scalar(text("SELECT pg_current_wal_lsn()::text")))


_REPLAYED = text("SELECT pg_is_in_recovery(), pg_last_wal_replay_lsn() >= CAST(:lsn AS pg_lsn)")


def replayed(session: Session, position: str, wait: float = 0.0) -> bool | None:
    """Whether the standby replayed up to `position` within `wait` seconds; None when
    it is not in recovery (not a standby: nothing tells how far it is)."""
    deadline = time.monotonic() + wait
    while True:
        row = session.execute(_REPLAYED, {"lsn": position}).one()
        if not row[0]:
            return None
        if row[1]:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL_SECONDS)


def caught_up_reads(
    primary: sessionmaker[Session],
    standby: sessionmaker[Session] | None,
    what: str,
    *,
    wait: float = CATCH_UP_SECONDS,
) -> sessionmaker[Session]:
    """The standby's sessions once it replayed the primary's position of now, else the
    primary's; `what` names the work in the log line of a fallback."""
    if standby is None:
        return primary
    try:
        with primary() as session:
            position = primary_position(session)
        if position is None:
            return primary
        with standby() as session:
            done = replayed(session, position, wait)
    except SQLAlchemyError as error:
        log.warning(
            "%s: the read replica did not answer (%s); reading the primary",
            what,
            type(error).__name__,
        )
        return primary
    if done:
        return standby
    why = "is not a standby" if done is None else f"has not replayed up to {position}"
    log.info("%s: the read replica %s; reading the primary", what, why)
    return primary
