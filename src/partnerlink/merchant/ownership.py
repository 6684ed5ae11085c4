"""Ownership checks: a merchant reaches only its own profiles, stores and connections
(else 404)."""

from __future__ import annotations

from typing import TypeVar

from sqlalchemy import Select, select
from sqlalchemy.orm import Session

from partnerlink.merchant.models import Profile
from partnerlink.problems import NotFound
from partnerlink.stores.models import Store
from partnerlink.tokens.models import Connection

T = TypeVar("T")


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
    """The merchant's own store; another merchant's answers 404."""
    owned = (
        select(Store)
        .join(Profile, Profile.id == Store.profile_id)
        .where(Store.id == store_id, Profile.merchant_id == merchant_id)
    )
    return _one_owned(session, owned, store_id, "store")


def owned_connection(session: Session, *, merchant_id: str, connection_id: str) -> Connection:
    """A connection of one of the merchant's stores; another merchant's answers 404."""
    owned = (
        select(Connection)
        .join(Store, Store.id == Connection.store_id)
        .join(Profile, Profile.id == Store.profile_id)
        .where(Connection.id == connection_id, Profile.merchant_id == merchant_id)
    )
    return _one_owned(session, owned, connection_id, "connection")


def _one_owned(session: Session, owned: Select[T], object_id: str, what: str) -> T:
    if not looks_like_id(object_id):
        raise NotFound(f"No such {what}.")
    row = session.execute(owned).scalar_one_or_none()
    if row is None:
        raise NotFound(f"No such {what}.")
    return row
