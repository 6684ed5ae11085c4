"""Store profiles: apply what a partner sends, and the views of a store."""

from __future__ import annotations

from typing import Any

from babel.numbers import get_territory_currencies
from sqlalchemy.orm import Session

from partnerlink.problems import InvalidToken
from partnerlink.stores.models import Store
from partnerlink.stores.schemas import StoreProfileIn

# A territory with no tender of its own (Antarctica) still needs a currency.
FALLBACK_CURRENCY = "USD"


def default_currency_for(country_code: str) -> str:
    """Returns the country's current legal tender (ISO 4217), e.g. JP -> JPY."""
    currencies = get_territory_currencies(country_code.upper(), tender=True)
    return currencies[0] if currencies else FALLBACK_CURRENCY


def load_store(session: Session, *, store_id: str) -> Store:
    """Loads the store behind an access token."""
    store = session.get(Store, store_id)
    if store is None:
        # The token's store was deleted between authentication and now.
        raise InvalidToken()
    return store


def apply_store_profile(session: Session, *, store_id: str, profile: StoreProfileIn) -> Store:
    """Writes a partner's store profile onto the store.

    Optional fields that are absent (or null) keep their stored value. An absent
    currency keeps the store's configured one, unless the country changes: then
    the new country's currency applies.
    """
    store = load_store(session, store_id=store_id)
    if profile.storeCurrency:
        currency = profile.storeCurrency
    elif store.currency and store.country_code == profile.storeCountryCode:
        currency = store.currency
    else:
        currency = default_currency_for(profile.storeCountryCode)
    store.name = profile.storeName
    store.address = profile.storeAddress
    store.country_code = profile.storeCountryCode
    store.currency = currency
    if profile.storeCity is not None:
        store.city = profile.storeCity
    if profile.storeState is not None:
        store.state = profile.storeState
    if profile.storePostalCode is not None:
        store.postal_code = profile.storePostalCode
    if profile.storePhoneNumber is not None:
        store.phone_number = profile.storePhoneNumber
    session.flush()
    return store


def store_response(store: Store) -> dict[str, Any]:
    """Returns the `{"store": {...}}` answer of PUT /v1/stores (SPEC.md endpoint 6)."""
    return {
        "store": {
            "id": store.id,
            "name": store.name,
            "phoneNumber": store.phone_number or "",
            "address": {
                "addressLine": store.address or "",
                "city": store.city or "",
                "state": store.state or "",
                "country": store.country_code,
                "postalCode": store.postal_code or "",
            },
            "currency": store.currency,
        }
    }


def merchant_store_view(store: Store) -> dict[str, Any]:
    """Returns the Store object of the merchant API (CONTRACT.md §4)."""
    return {
        "id": store.id,
        "name": store.name,
        "address": store.address or "",
        "city": store.city or "",
        "countryCode": store.country_code,
        "currency": store.currency,
        "posType": store.pos_type,
        "greenInvoices": bool(store.green_invoices),
        "manual": bool(store.manual),
    }


def store_settings(store: Store) -> dict[str, Any]:
    """Returns the answer of GET /v1/stores (SPEC.md endpoint 7)."""
    return {"greenInvoices": bool(store.green_invoices)}
