"""Background ingestion of customer uploads (filled in by the customers capability)."""

from __future__ import annotations

from sqlalchemy.orm import Session, sessionmaker

from partnerlink.settings import Settings


def ingest_next_upload(sessions: sessionmaker[Session], settings: Settings) -> int:
    """Claims one received upload and ingests it; returns 1 if it did work."""
    return 0
