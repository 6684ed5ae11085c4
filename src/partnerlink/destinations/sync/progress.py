"""What a running sync carries: its lease on the destination, and the platform's answers."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from partnerlink.db.base import utcnow
from partnerlink.destinations import queries
from partnerlink.jobs import renew_lease

LEASE_SECONDS = 300.0  # renewed with every batch recorded


class Lease:
    def __init__(self, destination_id: str, until: datetime) -> None:
        self.destination_id = destination_id
        self.until = until

    def renew(self, session: Session) -> None:
        """In the transaction recording a batch: that batch is kept only if we still hold
        the destination (else jobs.LeaseLost)."""
        self.until = renew_lease(
            session,
            queries.destinations,
            row_id=self.destination_id,
            lease_until=self.until,
            lease_seconds=LEASE_SECONDS,
            now=utcnow(),
        )


class Report:
    """The platform's answers over one sync, for `lastReport`: counts summed, the latest
    request id kept; and every Google request of the sync with how many rows it carried
    (`requests`), whose verdicts the worker reads afterwards (destinations/verdicts.py)."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}
        self.requests: list[tuple[str, int]] = []
        # Whether the held members should be counted again after the sync (an audience
        # sync that read only the changes leaves the count its records kept).
        self.recount = True

    def add(self, answer: dict[str, Any]) -> None:
        for key, value in answer.items():
            if key == "requests":
                self.requests.extend((str(request), int(rows)) for request, rows in value)
            elif isinstance(value, int) and not isinstance(value, bool):
                self.values[key] = int(self.values.get(key) or 0) + value
            elif value is not None:
                self.values[key] = value

    def as_json(self) -> dict[str, Any] | None:
        return dict(self.values) or None
