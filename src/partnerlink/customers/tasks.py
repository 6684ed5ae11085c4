"""Background ingestion of customer uploads (one task of the worker loop)."""

from __future__ import annotations

from sqlalchemy.orm import Session, sessionmaker

from partnerlink.customers.ingestion.batch_commit import Reclassify
from partnerlink.customers.ingestion.ingest import claim_upload, ingest_upload
from partnerlink.settings import Settings


def ingest_next_upload(
    sessions: sessionmaker[Session], settings: Settings, *, reclassify: Reclassify
) -> int:
    """Claims one received upload and ingests it; returns 1 if it did work."""
    upload = claim_upload(sessions, settings)
    if upload is None:
        return 0
    ingest_upload(sessions, settings, upload, reclassify=reclassify)
    return 1
