"""Stores a merchant adds by hand, and a store's e-receipt flag."""

from __future__ import annotations

from pydantic import ValidationError as PydanticValidationError
from sqlalchemy.orm import Session

from partnerlink.merchant.ownership import owned_profile, owned_store
from partnerlink.problems import ValidationFailed
from partnerlink.stores import service as stores
from partnerlink.stores.models import Store
from partnerlink.stores.schemas import StoreProfileIn
from partnerlink.tokens.service import event_receivers
from partnerlink.webhooks.events import store_settings_updated


def create_manual_store(
    session: Session,
    *,
    merchant_id: str,
    profile_id: str,
    name: str,
    address: str,
    country_code: str,
    currency: str | None = None,
) -> Store:
    """Adds a store by hand to one of the merchant's profiles."""
    owned_profile(session, merchant_id=merchant_id, profile_id=profile_id)
    try:
        fields = StoreProfileIn.model_validate(
            {
                "storeName": name,
                "storeAddress": address,
                "storeCountryCode": country_code,
                "storeCurrency": currency,
            }
        )
    except PydanticValidationError as error:
        raise _as_validation_failed(error) from error
    return stores.create_store(
        session,
        profile_id=profile_id,
        name=fields.storeName,
        address=fields.storeAddress,
        country_code=fields.storeCountryCode,
        currency=fields.storeCurrency or stores.default_currency_for(fields.storeCountryCode),
        manual=True,
    )


_MERCHANT_FIELD_NAMES = {
    "storeName": "name",
    "storeAddress": "address",
    "storeCountryCode": "countryCode",
    "storeCurrency": "currency",
}


def _as_validation_failed(error: PydanticValidationError) -> ValidationFailed:
    errors = [
        {
            "field": _MERCHANT_FIELD_NAMES.get(str(e["loc"][0]), str(e["loc"][0])),
            "message": "required" if e["type"] == "missing" else e["msg"],
        }
        for e in error.errors()
    ]
    missing = any(e["type"] == "missing" for e in error.errors())
    first = errors[0]
    detail = (
        f"{first['field']} is required"
        if first["message"] == "required"
        else f"{first['field']}: {first['message']}"
    )
    return ValidationFailed(
        detail, code="missing_field" if missing else "invalid_field", errors=errors
    )


def set_green_invoices(
    session: Session, *, merchant_id: str, store_id: str, enabled: bool
) -> Store:
    """Turns the store's e-receipt flag on or off; connected partners hear of a change."""
    store = owned_store(session, merchant_id=merchant_id, store_id=store_id)
    if bool(store.green_invoices) != enabled:
        store_settings_updated(
            session,
            receivers=event_receivers(session, store_id=store.id),
            store_id=store.id,
            green_invoices=enabled,
        )
    stores.set_green_invoices(session, store_id=store.id, enabled=enabled)
    return store
