"""The store profile a partner sends (PUT /v1/stores, and the `store` snapshot of an order),
and the answers that show a store (to its partner, and to its merchant)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationInfo
from pydantic_core import PydanticCustomError

from partnerlink.kit.countries import country_codes
from partnerlink.kit.currencies import currency_codes
from partnerlink.kit.text import storable_text
from partnerlink.phones import normalize_phone
from partnerlink.stores.models import Store


def _reject_control_characters(value: str) -> str:
    if not storable_text(value):
        raise PydanticCustomError("invalid_text", "must be printable text")
    return value


def _required_text(value: str) -> str:
    stripped = _reject_control_characters(value).strip()
    if not stripped:
        # Reported like an absent field: "required", code missing_field.
        raise PydanticCustomError("missing", "required")
    return stripped


def _optional_text(value: str | None) -> str | None:
    return None if value is None else _reject_control_characters(value).strip()


def _country_code(value: str) -> str:
    code = value.strip().upper()
    if code not in country_codes():
        raise PydanticCustomError(
            "invalid_country", "must be an ISO 3166-1 alpha-2 country code, e.g. US"
        )
    return code


def _currency_code(value: str | None) -> str | None:
    if value is None or not value.strip():
        return None
    code = value.strip().upper()
    if code not in currency_codes():
        raise PydanticCustomError("invalid_currency", "must be an ISO 4217 currency code, e.g. USD")
    return code


def _strict_string(value: Any) -> Any:
    # Numbers, booleans, arrays and objects are refused rather than coerced.
    if value is not None and not isinstance(value, str):
        raise PydanticCustomError("string_type", "must be a string")
    return value


def _present_string(value: Any) -> Any:
    if value is None:
        raise PydanticCustomError("missing", "required")
    return _strict_string(value)


def _at_most(limit: int) -> Callable[[str | None], str | None]:
    def check(value: str | None) -> str | None:
        if value is not None and len(value) > limit:
            raise PydanticCustomError(
                "string_too_long", "must be at most {max_length} characters", {"max_length": limit}
            )
        return value

    return check


def _store_phone(value: str | None, info: ValidationInfo) -> str | None:
    """A phone number read in the store's country, kept in E.164 (what receipts link to).

    Blank clears the number. When the country itself was refused, only that error is told.
    """
    if not value or "storeCountryCode" not in info.data:
        return value
    e164 = normalize_phone(value, info.data["storeCountryCode"])
    if e164 is None:
        raise PydanticCustomError(
            "invalid_phone",
            "must be a phone number, e.g. +12175550100 (without a leading + it is read "
            "in the store's country)",
        )
    return e164


_REQUIRED = (BeforeValidator(_present_string), AfterValidator(_required_text))
_OPTIONAL = (BeforeValidator(_strict_string), AfterValidator(_optional_text))

# Limits match the column sizes, so an over-long value is a 400, never a database error.
Text50 = Annotated[str, *_REQUIRED, AfterValidator(_at_most(50))]
Text300 = Annotated[str, *_REQUIRED, AfterValidator(_at_most(300))]
Text500 = Annotated[str, *_REQUIRED, AfterValidator(_at_most(500))]
OptionalText50 = Annotated[str | None, *_OPTIONAL, AfterValidator(_at_most(50))]
OptionalText200 = Annotated[str | None, *_OPTIONAL, AfterValidator(_at_most(200))]


class StoreProfileIn(BaseModel):
    """Store profile fields of SPEC.md; absent optional fields leave stored values alone."""

    model_config = ConfigDict(
        extra="ignore",
        json_schema_extra={
            "examples": [
                {
                    "storeName": "Bistro Central",
                    "storeAddress": "1 Main Street",
                    "storeCity": "Springfield",
                    "storeState": "IL",
                    "storeCountryCode": "US",
                    "storePostalCode": "62701",
                    "storePhoneNumber": "+12175550100",
                    "storeCurrency": "USD",
                }
            ]
        },
    )

    storeName: Annotated[Text300, Field(description="Display name.")]
    storeAddress: Annotated[Text500, Field(description="Street address line.")]
    storeCountryCode: Annotated[
        Text50,
        AfterValidator(_country_code),
        Field(description="ISO 3166-1 alpha-2 country code (any case).", examples=["US"]),
    ]
    storeCity: OptionalText200 = None
    storeState: OptionalText200 = None
    storePostalCode: OptionalText50 = None
    storePhoneNumber: Annotated[
        OptionalText50,
        AfterValidator(_store_phone),
        Field(
            description="Public contact number, read in the store's country when it has no "
            "leading +; kept (and answered) in E.164.",
            examples=["+12175550100"],
        ),
    ] = None
    storeCurrency: Annotated[
        str | None,
        BeforeValidator(_strict_string),
        AfterValidator(_currency_code),
        Field(
            description="ISO 4217 code; when absent, the store keeps its currency, "
            "or takes the country's when the country changes.",
            examples=["USD"],
        ),
    ] = None


class StoreAddressOut(BaseModel):
    addressLine: str
    city: str
    state: str
    country: str = Field(description="ISO 3166-1 alpha-2 country code.")
    postalCode: str


class StoreOut(BaseModel):
    id: str
    name: str
    phoneNumber: str
    address: StoreAddressOut
    currency: str = Field(description="ISO 4217 currency code.")


class StoreEnvelope(BaseModel):
    """Answer of PUT /v1/stores. Fields never set are empty strings."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "store": {
                        "id": "0b6f4c1e-8d55-4a8e-9a38-2f1f0f4f6a11",
                        "name": "Bistro Central",
                        "phoneNumber": "+12175550100",
                        "address": {
                            "addressLine": "1 Main Street",
                            "city": "Springfield",
                            "state": "IL",
                            "country": "US",
                            "postalCode": "62701",
                        },
                        "currency": "USD",
                    }
                }
            ]
        }
    )

    store: StoreOut


class StoreSettingsOut(BaseModel):
    """Answer of GET /v1/stores."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"greenInvoices": True}]})

    greenInvoices: bool = Field(
        description="Per-store e-receipt flag set by the merchant; when false no e-receipt "
        "is issued whatever the order says."
    )


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
