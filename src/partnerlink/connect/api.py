"""Endpoints 1–4: the partner's side of the consent-screen flow (query parameters only)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from sqlalchemy.orm import Session

from partnerlink.connect import service
from partnerlink.connect.schemas import (
    ExchangedTokens,
    IntegrationStatus,
    IntegrationTokenCreated,
    RefreshedToken,
    example_of,
    timestamp,
)
from partnerlink.connect.service import (
    AlreadyExchanged,
    InvalidGrantType,
    MissingField,
    NotFinished,
    UnknownIntegrationToken,
    UnknownRefreshToken,
)
from partnerlink.deps import SessionDep, SettingsDep
from partnerlink.partners.models import Partner
from partnerlink.problems import InvalidCredentials, field_problem, problem_responses

router = APIRouter(tags=["Consent-screen flow"])
CREDENTIALS_REFUSED = (field_problem("client_id", "required"), InvalidCredentials)

ClientId = Annotated[str, Query(description="Your client id, issued with your credentials.")]
ClientSecret = Annotated[
    str, Query(description="Your client secret. Send it from your backend only, never a device.")
]
IntegrationTokenParam = Annotated[
    str, Query(description="The `integrationToken` returned by `POST /v1/auth/integration`.")
]


def _require(**values: str) -> None:
    """An empty parameter counts as absent: 400 `missing_field`, like a missing one."""
    blank = [name for name, value in values.items() if not value.strip()]
    if blank:
        raise MissingField(
            f"{blank[0]} is required",
            errors=[{"field": name, "message": "required"} for name in blank],
        )


def _partner(session: Session, client_id: str, client_secret: str, **others: str) -> Partner:
    """Checks that every parameter is present (400), then the credentials (403)."""
    _require(client_id=client_id, client_secret=client_secret, **others)
    return service.authenticate_client(session, client_id=client_id, client_secret=client_secret)


@router.post(
    "/auth/integration",
    summary="1. Create an integration token",
    description=(
        "Starts the consent-screen flow. The token is `pending` for one hour. Then open "
        "`{connect_url}/?client_id={client_id}&integration_token={integrationToken}` in a "
        "browser window or IFrame for the merchant, and poll `GET /v1/auth/integration`."
    ),
    response_model=IntegrationTokenCreated,
    responses=example_of(IntegrationTokenCreated) | problem_responses(*CREDENTIALS_REFUSED),
)
def create_integration_token(
    session: SessionDep, settings: SettingsDep, client_id: ClientId, client_secret: ClientSecret
) -> IntegrationTokenCreated:
    partner = _partner(session, client_id, client_secret)
    value = service.create_integration_token(
        session, partner=partner, ttl_seconds=settings.integration_token_ttl_seconds
    )
    return IntegrationTokenCreated(integrationToken=value)


@router.get(
    "/auth/integration",
    summary="2. Read the status of an integration token",
    description=(
        "`pending` until the merchant answers on the consent screen, then `finished` "
        "(exchange it with `GET /v1/auth/integration/token`) or `cancelled` (declined, or "
        "the one-hour lifetime ran out: create a new token). Poll every few seconds."
    ),
    response_model=IntegrationStatus,
    responses=example_of(IntegrationStatus)
    | problem_responses(*CREDENTIALS_REFUSED, UnknownIntegrationToken),
)
def read_integration_status(
    session: SessionDep,
    client_id: ClientId,
    client_secret: ClientSecret,
    integration_token: IntegrationTokenParam,
) -> IntegrationStatus:
    partner = _partner(session, client_id, client_secret, integration_token=integration_token)
    status = service.integration_status(
        session, partner=partner, integration_token=integration_token
    )
    return IntegrationStatus(status=status)


@router.get(
    "/auth/integration/token",
    summary="3. Exchange a finished integration token for tokens",
    description=(
        "Answers once, when the status is `finished`: a store access token (valid one "
        "year), a refresh token (no expiry; returned only here) and whether to offer "
        "e-receipts. A second exchange answers 410. Connecting the same store again "
        "revokes the tokens of its earlier connection to you."
    ),
    response_model=ExchangedTokens,
    responses=example_of(ExchangedTokens)
    | problem_responses(
        NotFinished,
        *CREDENTIALS_REFUSED,
        UnknownIntegrationToken,
        AlreadyExchanged,
    ),
)
def exchange_integration_token(
    session: SessionDep,
    settings: SettingsDep,
    client_id: ClientId,
    client_secret: ClientSecret,
    integration_token: IntegrationTokenParam,
) -> ExchangedTokens:
    partner = _partner(session, client_id, client_secret, integration_token=integration_token)
    issued = service.exchange_integration_token(
        session,
        partner=partner,
        integration_token=integration_token,
        access_ttl_seconds=settings.access_token_ttl_seconds,
    )
    return ExchangedTokens(
        accessToken=issued.access_token,
        refreshToken=issued.refresh_token,
        expiration=timestamp(issued.expires_at),
        ereceipt=issued.ereceipt,
    )


@router.post(
    "/auth/token",
    summary="4. Refresh the access token",
    description=(
        "Mints a new access token from the refresh token, before or after the current one "
        "expires. Earlier access tokens stay valid until their own expiry, so a retried "
        "refresh is harmless. Once the merchant revokes the connection the refresh token "
        "answers 403: run the connection flow again."
    ),
    response_model=RefreshedToken,
    responses=example_of(RefreshedToken)
    | problem_responses(InvalidGrantType, *CREDENTIALS_REFUSED, UnknownRefreshToken),
)
def refresh_access_token(
    session: SessionDep,
    settings: SettingsDep,
    client_id: ClientId,
    client_secret: ClientSecret,
    code: Annotated[str, Query(description="The refresh token.")],
    grant_type: Annotated[str, Query(description="Must be the literal `refresh_token`.")],
) -> RefreshedToken:
    _require(grant_type=grant_type)
    if grant_type != "refresh_token":
        raise InvalidGrantType()
    partner = _partner(session, client_id, client_secret, code=code)
    access, expires_at = service.refresh_access_token(
        session,
        partner=partner,
        refresh_token=code,
        access_ttl_seconds=settings.access_token_ttl_seconds,
    )
    return RefreshedToken(accessToken=access, expiration=timestamp(expires_at))
