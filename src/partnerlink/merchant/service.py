"""Merchant accounts, sign-in sessions and ownership checks."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from email_validator import EmailNotValidError, validate_email
from pydantic import ValidationError as PydanticValidationError
from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from partnerlink.db.base import utcnow
from partnerlink.merchant.models import Merchant, MerchantSession, Profile
from partnerlink.partners.models import Partner
from partnerlink.problems import (
    Conflict,
    NotFound,
    RateLimited,
    Unauthorized,
    ValidationFailed,
)
from partnerlink.security.passwords import hash_password, verify_password
from partnerlink.security.rate_limit import FailureBudget
from partnerlink.security.secrets import SESSION_TOKEN_PREFIX, digest, mint
from partnerlink.settings import Settings
from partnerlink.stores.models import Store
from partnerlink.stores.schemas import StoreProfileIn, storable_text
from partnerlink.stores.service import default_currency_for, merchant_store_view
from partnerlink.tokens.models import Connection
from partnerlink.tokens.service import revoke_connection

MIN_PASSWORD_LENGTH = 8


def normalize_account_email(email: str) -> str:
    try:
        # test_environment admits the reserved `.test` domain (demo@partnerlink.test).
        checked = validate_email(email.strip(), check_deliverability=False, test_environment=True)
        return checked.normalized.lower()
    except EmailNotValidError as error:
        raise ValidationFailed(
            "email is not a valid address",
            errors=[{"field": "email", "message": str(error)}],
        ) from error


def create_merchant(
    session: Session, *, email: str, password: str, name: str | None = None
) -> Merchant:
    normalized = normalize_account_email(email)
    if len(password) < MIN_PASSWORD_LENGTH:
        raise ValidationFailed(
            f"password must be at least {MIN_PASSWORD_LENGTH} characters",
            errors=[{"field": "password", "message": "too short"}],
        )
    if session.scalar(select(Merchant.id).where(Merchant.email == normalized)):
        raise Conflict("a merchant with this email exists", code="email_taken")
    merchant = Merchant(email=normalized, password_hash=hash_password(password), name=name)
    session.add(merchant)
    session.flush()
    return merchant


def authenticate_merchant(session: Session, *, email: str, password: str) -> Merchant:
    """Same answer, and about the same time, for an unknown email and a wrong password."""
    lookup = email.strip().lower()
    # Text no account can have is not sent to the database (PostgreSQL refuses NUL).
    merchant = (
        session.scalar(select(Merchant).where(Merchant.email == lookup))
        if storable_text(lookup) and len(lookup) <= 320
        else None
    )
    if not verify_password(password, merchant.password_hash if merchant else None) or not merchant:
        raise Unauthorized()
    return merchant


@dataclass(frozen=True)
class StartedSession:
    token: str
    expires_at: datetime


def start_session(session: Session, *, merchant: Merchant, ttl_seconds: int) -> StartedSession:
    token = mint(SESSION_TOKEN_PREFIX)
    expires_at = utcnow() + timedelta(seconds=ttl_seconds)
    session.add(
        MerchantSession(merchant_id=merchant.id, token_hash=digest(token), expires_at=expires_at)
    )
    session.flush()
    return StartedSession(token=token, expires_at=expires_at)


# Passwords can be guessed: failed sign-ins are budgeted per account (slow guessing of one
# password) and per client address (one address spraying many accounts).
SIGN_IN_FAILURES_PER_EMAIL = "10/15minutes"
SIGN_IN_FAILURES_PER_ADDRESS = "30/15minutes"


def sign_in_budgets(storage_uri: str) -> tuple[FailureBudget, FailureBudget]:
    """Returns the (per email, per client address) failure budgets of merchant sign-in."""
    return (
        FailureBudget("merchant-sign-in-email", SIGN_IN_FAILURES_PER_EMAIL, storage_uri),
        FailureBudget("merchant-sign-in-address", SIGN_IN_FAILURES_PER_ADDRESS, storage_uri),
    )


def sign_in(
    session: Session,
    *,
    email: str,
    password: str,
    client_address: str,
    settings: Settings,
) -> StartedSession:
    """Checks email and password within the failure budgets and starts a session."""
    by_email, by_address = sign_in_budgets(settings.rate_limit_storage)
    email_key = email.strip().lower()
    spent = [
        budget.retry_after_seconds(key)
        for budget, key in ((by_email, email_key), (by_address, client_address))
        if budget.exhausted(key)
    ]
    if spent:
        raise RateLimited(max(spent), "Too many failed sign-ins; try again later.")
    try:
        merchant = authenticate_merchant(session, email=email, password=password)
    except Unauthorized as error:
        by_email.record_failure(email_key)
        by_address.record_failure(client_address)
        raise Unauthorized(headers={"WWW-Authenticate": 'Bearer realm="merchant"'}) from error
    by_email.reset(email_key)
    return start_session(
        session, merchant=merchant, ttl_seconds=settings.merchant_session_ttl_seconds
    )


def merchant_for_session_token(session: Session, token: str) -> Merchant | None:
    if not token:
        return None
    row = session.execute(
        select(Merchant, MerchantSession.expires_at)
        .join(MerchantSession, MerchantSession.merchant_id == Merchant.id)
        .where(MerchantSession.token_hash == digest(token))
    ).first()
    if row is None or row[1] <= utcnow():
        return None
    merchant: Merchant = row[0]
    return merchant


def end_session(session: Session, token: str) -> None:
    session.execute(delete(MerchantSession).where(MerchantSession.token_hash == digest(token)))


def _looks_like_id(value: str) -> bool:
    # Ids are UUIDs. Anything else cannot match; checking first keeps odd path input
    # (NUL, lone surrogates) away from PostgreSQL, which would refuse it with an error.
    return len(value) <= 64 and value.isascii() and value.isprintable()


def owned_profile(session: Session, *, merchant_id: str, profile_id: str) -> Profile:
    """The merchant's own profile; another merchant's answers 404, never 403."""
    if not _looks_like_id(profile_id):
        raise NotFound("No such profile.")
    profile = session.get(Profile, profile_id)
    if profile is None or profile.merchant_id != merchant_id:
        raise NotFound("No such profile.")
    return profile


def owned_store(session: Session, *, merchant_id: str, store_id: str) -> Store:
    if not _looks_like_id(store_id):
        raise NotFound("No such store.")
    row = session.execute(
        select(Store)
        .join(Profile, Profile.id == Store.profile_id)
        .where(Store.id == store_id, Profile.merchant_id == merchant_id)
    ).scalar_one_or_none()
    if row is None:
        raise NotFound("No such store.")
    return row


# --- Profiles, manual stores and connections (merchant API and console) ---


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
    store = Store(
        profile_id=profile_id,
        name=fields.storeName,
        address=fields.storeAddress,
        country_code=fields.storeCountryCode,
        currency=fields.storeCurrency or default_currency_for(fields.storeCountryCode),
        manual=True,
        green_invoices=False,
    )
    session.add(store)
    session.flush()
    return store


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
    """Turns the store's e-receipt flag on or off."""
    store = owned_store(session, merchant_id=merchant_id, store_id=store_id)
    store.green_invoices = enabled
    session.flush()
    return store


def list_store_connections(
    session: Session, *, merchant_id: str, store_id: str
) -> list[dict[str, Any]]:
    """Lists the store's connections, live and revoked, newest first."""
    owned_store(session, merchant_id=merchant_id, store_id=store_id)
    rows = session.execute(
        select(Connection, Partner.pos_type, Partner.name)
        .join(Partner, Partner.id == Connection.partner_id)
        .where(Connection.store_id == store_id)
        .order_by(Connection.created_at.desc(), Connection.id.desc())
    )
    return [
        {
            "id": connection.id,
            "posType": pos_type,
            "method": connection.method,
            "createdAt": connection.created_at.isoformat(),
            "revokedAt": connection.revoked_at.isoformat() if connection.revoked_at else None,
            "partnerName": partner_name,
        }
        for connection, pos_type, partner_name in rows
    ]


def revoke_merchant_connection(session: Session, *, merchant_id: str, connection_id: str) -> None:
    """Revokes one of the merchant's connections; its tokens stop working at once."""
    if not _looks_like_id(connection_id):
        raise NotFound("No such connection.")
    connection = session.execute(
        select(Connection)
        .join(Store, Store.id == Connection.store_id)
        .join(Profile, Profile.id == Store.profile_id)
        .where(Connection.id == connection_id, Profile.merchant_id == merchant_id)
    ).scalar_one_or_none()
    if connection is None:
        raise NotFound("No such connection.")
    revoke_connection(session, connection)
