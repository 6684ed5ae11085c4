"""Profiles (a merchant's businesses) and the view of them with their stores."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from partnerlink.kit.text import storable_text
from partnerlink.merchant.models import Profile
from partnerlink.problems import ValidationFailed
from partnerlink.stores.models import Store
from partnerlink.stores.schemas import merchant_store_view


def _clean_name(value: str, field: str, limit: int) -> str:
    name = value.strip()
    if not name:
        raise ValidationFailed(
            f"{field} is required",
            code="missing_field",
            errors=[{"field": field, "message": "required"}],
        )
    if len(name) > limit or not storable_text(name):
        raise ValidationFailed(
            f"{field} is invalid",
            errors=[{"field": field, "message": f"at most {limit} printable characters"}],
        )
    return name


def create_profile(session: Session, *, merchant_id: str, name: str) -> Profile:
    """Creates a profile (a business) for the merchant."""
    profile = Profile(merchant_id=merchant_id, name=_clean_name(name, "name", 200))
    session.add(profile)
    session.flush()
    return profile


def profiles_view(session: Session, *, merchant_id: str) -> list[dict[str, Any]]:
    """Lists the merchant's profiles with their stores, oldest first."""
    profiles = list(
        session.scalars(
            select(Profile)
            .where(Profile.merchant_id == merchant_id)
            .order_by(Profile.created_at, Profile.id)
        )
    )
    stores_by_profile: dict[str, list[dict[str, Any]]] = {p.id: [] for p in profiles}
    if profiles:
        for store in session.scalars(
            select(Store)
            .where(Store.profile_id.in_(list(stores_by_profile)))
            .order_by(Store.created_at, Store.id)
        ):
            stores_by_profile[store.profile_id].append(merchant_store_view(store))
    return [{"id": p.id, "name": p.name, "stores": stores_by_profile[p.id]} for p in profiles]
