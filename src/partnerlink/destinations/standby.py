"""Where a sync reads: the hot standby (`PARTNERLINK_DATABASE_READ_URL`) once it has
replayed what the primary held when the sync began, else the primary.

The audience sync compares the segment with the held rows (destination_members) that
the syncs themselves write on the primary; a standby that had not yet replayed the last
sync's records would answer rows already sent as still to send (or removed ones as
still held). So each sync of a destination first reads the primary's WAL position and
waits, a few seconds at most, for the standby to have replayed up to it; if it has not
(or the standby cannot answer), the sync reads the primary, as without the setting.

Within one sync the standby then stays sound although it lags this sync's own writes:
the customers are read in ascending ranges of ids (audience sync) and the orders in
ascending row ids (conversion sync), and what is written after a range is read (held
rows, their fingerprints, the orders sent) concerns only ids of ranges already read.
No later read looks at a row this sync wrote, and the lease keeps every other sync of
the destination away meanwhile. What is read after the sync (the member count) and
every write (records, counters, the basis, VACUUM) go to the primary.
"""

from __future__ import annotations

import logging
import time

from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

log = logging.getLogger("partnerlink.destinations")

CATCH_UP_SECONDS = 3.0
POLL_SECONDS = 0.05


def _primary_position(primary: sessionmaker[Session]) -> str | None:
    """The primary's current WAL position; None off PostgreSQL."""
    with primary() as session:
        if session.get_bind().dialect.name != "postgresql":
            return None
        return str(session.scalar(text("SELECT pg_current_wal_lsn()::text")))


def _replayed(standby: sessionmaker[Session], position: str, wait: float) -> bool | None:
    """Whether the standby replayed up to `position` within `wait` seconds; None when
    it is not in recovery (not a standby: nothing tells how far it is)."""
    deadline = time.monotonic() + wait
    check = text("SELECT pg_is_in_recovery(), pg_last_wal_replay_lsn() >= CAST(:lsn AS pg_lsn)")
    with standby() as session:
        while True:
            row = session.execute(check, {"lsn": position}).one()
            if not row[0]:
                return None
            if row[1]:
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(POLL_SECONDS)


def reads_for(
    primary: sessionmaker[Session],
    standby: sessionmaker[Session] | None,
    destination_id: str,
    *,
    wait: float = CATCH_UP_SECONDS,
) -> sessionmaker[Session]:
    """The sessions one sync of the destination reads with (see the module's doc)."""
    if standby is None:
        return primary
    try:
        position = _primary_position(primary)
        if position is None:
            return primary
        replayed = _replayed(standby, position, wait)
    except SQLAlchemyError as error:
        log.warning(
            "destination %s: the read replica did not answer (%s); reading the primary",
            destination_id,
            type(error).__name__,
        )
        return primary
    if replayed:
        return standby
    why = "is not a standby" if replayed is None else f"has not replayed up to {position}"
    log.info("destination %s: the read replica %s; reading the primary", destination_id, why)
    return primary
