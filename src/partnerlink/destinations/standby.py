"""Where a sync reads: the hot standby (`PARTNERLINK_DATABASE_READ_URL`) once it has
replayed what the primary held when the sync began, else the primary.

The audience sync compares the segment with the held rows (destination_members) that
the syncs themselves write on the primary; a standby that had not yet replayed the last
sync's records would answer rows already sent as still to send (or removed ones as
still held), and the conversions sync skips the orders already sent
(destination_conversions): a lagging standby would send them again. So each sync of a
destination first reads the primary's WAL position and waits, a few seconds at most,
for the standby to have replayed up to it; if it has not (or the standby cannot
answer), the sync reads the primary, as without the setting.

Within one sync the standby then stays sound although it lags this sync's own writes:
the customers are read in ascending ranges of ids (audience sync) and the orders in
ascending row ids (conversion sync), and what is written after a range is read (held
rows, their fingerprints, the orders sent) concerns only ids of ranges already read.
No later read looks at a row this sync wrote, and the lease keeps every other sync of
the destination away meanwhile. What is read after the sync (the member count) and
every write (records, counters, the basis, VACUUM) go to the primary. The check itself
is partnerlink.db.replica's, shared with the audience-size refresh.
"""

from __future__ import annotations

from sqlalchemy.orm import Session, sessionmaker

from partnerlink.db import replica

CATCH_UP_SECONDS = replica.CATCH_UP_SECONDS


def reads_for(
    primary: sessionmaker[Session],
    standby: sessionmaker[Session] | None,
    destination_id: str,
    *,
    wait: float = CATCH_UP_SECONDS,
) -> sessionmaker[Session]:
    """The sessions one sync of the destination reads with (see the module's doc)."""
    return replica.caught_up_reads(primary, standby, f"destination {destination_id}", wait=wait)
