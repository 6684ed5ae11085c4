"""Google's verdicts on what a sync sent (CONTRACT §15, "Match results").

Google answers an ingest call with a `requestId` at once and processes the rows later;
what it made of them (how many matched, which were dropped for consent, age, duplicates
or format) is read with `requestStatus:retrieve`. A sync queues one check per request it
sent (`queue_checks`, in the transaction that records the sync's outcome); the worker
reads them until Google no longer answers PROCESSING, giving up 24 h after the send.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import insert
from sqlalchemy.orm import Session

from partnerlink.db.base import utcnow
from partnerlink.destinations.models import Destination, DestinationRequestCheck


def queue_checks(
    session: Session, destination: Destination, requests: Sequence[tuple[str, int]]
) -> None:
    """Queues the reading of each (request id, rows sent) Google answered this sync with."""
    if not requests:
        return
    now = utcnow()
    session.execute(
        insert(DestinationRequestCheck),
        [
            {
                "destination_id": destination.id,
                "profile_id": destination.profile_id,
                "request_id": request_id[:200],
                "records": records,
                "sent_at": now,
                "next_check_at": now,
                "attempts": 0,
            }
            for request_id, records in requests
        ],
    )
