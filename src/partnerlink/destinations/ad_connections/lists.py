"""What a connection lists and creates on its platform (CONTRACT §14), its `account`
checked first: Meta's ad account (digits, `act_` allowed), Google's customer id (10
digits, dashes allowed)."""

from __future__ import annotations

from typing import Any

import httpx
from sqlalchemy import select
from sqlalchemy.orm import Session

from partnerlink.audiences.service import DESCRIPTIONS
from partnerlink.destinations.ad_connections import google_login, meta_login, service
from partnerlink.destinations.ad_connections.errors import PlatformRefused
from partnerlink.destinations.ad_connections.models import AdConnection
from partnerlink.destinations.models import Destination
from partnerlink.destinations.schemas import CUSTOMER_ID, Problems, segment_of
from partnerlink.problems import ValidationFailed
from partnerlink.settings import Settings


def _token(settings: Settings, connection: AdConnection) -> str:
    token = service.open_token(settings.signing_key, connection)
    if token is None:  # the service key changed since
        raise PlatformRefused()
    return token


def account_of(connection: AdConnection, value: Any) -> str:
    """The account's digits, or a refusal naming `account`."""
    text = value if isinstance(value, str) else str(value) if isinstance(value, int) else ""
    if connection.platform == "meta":
        digits = meta_login.account_digits(text.strip())
        if digits:
            return digits
        message = "is required: an ad account id from the accounts list (digits)"
    else:
        if CUSTOMER_ID.fullmatch(text.strip()):
            return text.strip().replace("-", "")
        message = "is required: the Google Ads customer id, 10 digits, e.g. 123-456-7890"
    raise ValidationFailed(f"account {message}", errors=[{"field": "account", "message": message}])


def accounts(
    session: Session, settings: Settings, http: httpx.Client, connection: AdConnection
) -> list[dict[str, Any]]:
    if connection.platform == "meta":
        return meta_login.ad_accounts(http, settings, _token(settings, connection))
    told = session.scalars(
        select(Destination.target).where(
            Destination.ad_connection_id == connection.id,
            Destination.profile_id == connection.profile_id,
        )
    )
    ids = sorted({str(t.get("customerId")) for t in told if t and t.get("customerId")})
    return [{"id": i, "name": None, "currency": None} for i in ids]


def audiences(
    settings: Settings, http: httpx.Client, connection: AdConnection, account: str
) -> list[dict[str, Any]]:
    digits = account_of(connection, account)
    token = _token(settings, connection)
    if connection.platform == "meta":
        return meta_login.customer_list_audiences(http, settings, token, digits)
    return google_login.user_lists(http, settings, token, digits)


def datasets(
    settings: Settings, http: httpx.Client, connection: AdConnection, account: str
) -> list[dict[str, Any]]:
    if connection.platform != "meta":
        message = "Google sales go to a conversion action: type its id (Goals > Conversions)"
        raise ValidationFailed(message, errors=[{"field": "account", "message": message}])
    digits = account_of(connection, account)
    return meta_login.datasets(http, settings, _token(settings, connection), digits)


def audience_name(business: str, segment: str) -> str:
    return f"{business} – {segment}"[:200]


def create_audience(
    settings: Settings, http: httpx.Client, connection: AdConnection, business: str, body: Any
) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise ValidationFailed(
            "body must be a JSON object", errors=[{"field": "body", "message": "must be an object"}]
        )
    problems = Problems()
    account = problems.read(account_of, connection, body.get("account"))
    segment = problems.read(segment_of, body.get("segment"))
    problems.check()
    assert account is not None and segment is not None
    name = audience_name(business, segment)
    description = f"Kept in sync by PartnerLink: {DESCRIPTIONS.get(segment, segment)}"[:500]
    token = _token(settings, connection)
    if connection.platform == "meta":
        return meta_login.create_audience(http, settings, token, account, name, description)
    return google_login.create_user_list(http, settings, token, account, name, description)
