"""CONTRACT.md §9: revoke a connection, read a token's status, list the live connections."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, ConfigDict, Field

from partnerlink.connect import platform
from partnerlink.connect.api import CREDENTIALS_REFUSED, ClientId, ClientSecret, client_partner
from partnerlink.connect.schemas import example_of, timestamp
from partnerlink.deps import PageDep, SessionDep
from partnerlink.problems import InvalidToken, field_problem, problem_responses
from partnerlink.tokens.deps import CurrentStore, LegacyAccessToken, presented_access_token

router = APIRouter(tags=["Partner platform"])


class Revoked(BaseModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"success": True}]})

    success: bool = True


class TokenStatusOut(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "active": True,
                    "storeId": "0b6a3c1e5f2d4a7b9c8d1e2f3a4b5c6d",
                    "posType": "acme-pos",
                    "method": "consent",
                    "expiration": "2026-05-01T12:00:00.000Z",
                }
            ]
        }
    )

    active: bool = True
    storeId: str
    posType: str | None
    method: Literal["consent", "pairing"]
    expiration: str | None = Field(description="null for a pairing-flow (durable) token.")


class ConnectionOut(BaseModel):
    connectionId: str = Field(description="The merchant API's connection `id`.")
    storeId: str
    method: Literal["consent", "pairing"]
    createdAt: str


class ConnectionList(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "connections": [
                        {
                            "connectionId": "5d41402abc4b2a76b9719d911017c592",
                            "storeId": "0b6a3c1e5f2d4a7b9c8d1e2f3a4b5c6d",
                            "method": "pairing",
                            "createdAt": "2026-04-01T09:15:00.000Z",
                        }
                    ],
                    "nextCursor": None,
                }
            ]
        }
    )

    connections: list[ConnectionOut]
    nextCursor: str | None = Field(
        description="Pass as `cursor` for the next page; null on the last page."
    )


@router.post(
    "/auth/revoke",
    summary="Revoke a connection",
    description=(
        "Revokes the whole connection of the given access or refresh token: every access and "
        "refresh token of it is refused from now on, as when the merchant disconnects. An "
        "unknown token, or one that is not yours, also answers 200 and changes nothing "
        "(RFC 7009), so a retry is harmless."
    ),
    response_model=Revoked,
    responses=example_of(Revoked)
    | problem_responses(field_problem("token", "required"), *CREDENTIALS_REFUSED[1:]),
)
def revoke(
    session: SessionDep,
    client_id: ClientId,
    client_secret: ClientSecret,
    token: Annotated[str, Query(description="An access or refresh token of the connection.")],
) -> Revoked:
    partner = client_partner(session, client_id, client_secret, token=token)
    platform.revoke_by_token(session, partner=partner, token=token)
    return Revoked()


@router.get(
    "/auth/token/status",
    summary="Read an access token's status",
    description=(
        "Answers for a live access token: its store, the posType of the partner it was issued "
        "to, its connection flow and expiry "
        "(`null` for a pairing-flow token, which does not expire). A revoked, expired or "
        "unknown token answers 403 `invalid_token`, like every data endpoint."
    ),
    response_model=TokenStatusOut,
    responses=example_of(TokenStatusOut) | problem_responses(InvalidToken),
)
def token_status(
    request: Request,
    current: CurrentStore,
    session: SessionDep,
    _legacy_token: LegacyAccessToken = None,
) -> TokenStatusOut:
    status = platform.token_status(session, caller=current, token=presented_access_token(request))
    return TokenStatusOut(
        storeId=status.store_id,
        posType=status.pos_type,
        method=status.method,
        expiration=timestamp(status.expires_at) if status.expires_at else None,
    )


@router.get(
    "/connections",
    summary="List your live connections",
    description=(
        "Your connections that are not revoked, oldest first: one per connected store. "
        "`connectionId` is the id the merchant sees in the merchant API. Pages of `limit` "
        "(default 100, at most 1,000): pass `nextCursor` as `cursor` for the next page, until "
        "it is null. A connection opened meanwhile comes on a later page; none repeats."
    ),
    response_model=ConnectionList,
    responses=example_of(ConnectionList)
    | problem_responses(*CREDENTIALS_REFUSED, field_problem("cursor", "not a cursor of this list")),
)
def list_connections(
    session: SessionDep, client_id: ClientId, client_secret: ClientSecret, page: PageDep
) -> ConnectionList:
    partner = client_partner(session, client_id, client_secret)
    connections = platform.live_connections(
        session, partner=partner, limit=page.limit, cursor=page.cursor
    )
    return ConnectionList(
        connections=[
            ConnectionOut(
                connectionId=connection.id,
                storeId=connection.store_id,
                method=connection.method,
                createdAt=timestamp(connection.created_at),
            )
            for connection in connections.items
        ],
        nextCursor=connections.next_cursor,
    )
