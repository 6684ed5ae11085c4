"""Ownership checks: a merchant reaches only its own profiles and stores (else 404)."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from partnerlink.merchant.models import Profile
from partnerlink.problems import NotFound
from partnerlink.stores.models import Store


def looks_like_id(value: str) -> bool:
    # Ids are UUIDs. Anything else cannot match; checking first keeps odd path input
    # (NUL, lone surrogates) away from PostgreSQL, which would refuse it with an error.
    return len(value) <= 64 and value.isascii() and value.isprintable()


def owned_profile(session: Session, *, merchant_id: str, profile_id: str) -> Profile:
    """The merchant's own profile; another merchant's answers 404, never 403."""
    if not looks_like_id(profile_id):
        raise NotFound("No such profile.")
    profile = session.get(Profile, profile_id)
    if profile is None or profile.merchant_id != merchant_id:
        raise NotFound("No such profile.")
    return profile


def owned_store(session: Session, *, merchant_id: str, store_id: str) -> Store:
    if not looks_like_id(store_id):
        raise NotFound("No such store.")
    row = session.execute(
        select(Store)
        .join(Profile, Profile.id == Store.profile_id)
        .where(Store.id == store_id, Profile.merchant_id == merchant_id)
    ).scalar_one_or_none()
    if row is None:
        raise NotFound("No such store.")
    return row
