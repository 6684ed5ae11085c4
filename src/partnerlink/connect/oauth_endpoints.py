"""OAuth 2.0's token introspection (RFC 7662) and revocation (RFC 7009) over our tokens.

Both authenticate the partner as the token endpoint does (HTTP Basic or the form) and
read the token whatever kind it is, so `token_type_hint` is only ever a hint. A
partner learns nothing of another partner's tokens: introspecting one reads as
inactive, revoking one changes nothing and answers 200, as for an unknown token.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from authlib.oauth2.rfc6749 import InvalidRequestError, OAuth2Request
from authlib.oauth2.rfc7009 import RevocationEndpoint
from authlib.oauth2.rfc7662 import IntrospectionEndpoint
from sqlalchemy.orm import Session

from partnerlink.connect import oauth_flow
from partnerlink.connect.oauth_server import (
    AUTH_METHODS,
    SCOPE,
    PartnerClient,
    PartnerLinkServer,
    authorization_server,
)
from partnerlink.connect.platform import revoke_by_token
from partnerlink.db.base import utcnow
from partnerlink.settings import Settings


class Introspection(IntrospectionEndpoint):
    CLIENT_AUTH_METHODS = AUTH_METHODS
    server: PartnerLinkServer

    def query_token(self, token_string: str, token_type_hint: str | None) -> _Introspected | None:
        found = oauth_flow.introspect(self.server.session, value=token_string)
        return _Introspected(found) if found is not None else None

    def check_permission(self, token: _Introspected, client: PartnerClient, request: Any) -> bool:
        # A partner learns nothing of another partner's tokens: they read as inactive.
        return token.info.partner_id == client.partner.id

    def introspect_token(self, token: _Introspected) -> dict[str, Any]:
        info = token.info
        body: dict[str, Any] = {
            "active": True,
            "client_id": info.client_id,
            "scope": SCOPE,
            "iat": int(info.created_at.timestamp()),
            "storeId": info.store_id,
            "method": info.method,
        }
        # RFC 7662 §2.2: `token_type` is a type of RFC 6749 §7.1 (how an access token is
        # presented: "Bearer"). A refresh token is never presented to a resource, so it has
        # no such type; the member is OPTIONAL, and left out rather than invented.
        if info.kind == "access":
            body["token_type"] = "Bearer"
        if info.expires_at is not None:
            body["exp"] = int(info.expires_at.timestamp())
        return body


@dataclass(frozen=True)
class _Introspected:
    info: oauth_flow.IntrospectedToken

    def is_expired(self) -> bool:
        expires_at = self.info.expires_at
        return expires_at is not None and expires_at <= utcnow()

    def is_revoked(self) -> bool:
        return self.info.revoked


@dataclass(frozen=True)
class _Presented:
    """A token the partner asked to revoke; whether it is the partner's is checked on revoking."""

    value: str


class Revocation(RevocationEndpoint):
    """RFC 7009. Revoking an access or a refresh token revokes its whole connection.

    A refresh token's access tokens are "based on the same authorization grant", which
    §2.1 says SHOULD go with it; an access token's refresh token MAY go too, and does:
    our tokens are revoked by connection (tokens.service.revoke_connection), as when the
    merchant disconnects, and as `POST /v1/auth/revoke` does. Unknown, already revoked
    or another partner's: nothing changes, and the answer is the same 200 (§2.2).
    """

    CLIENT_AUTH_METHODS = AUTH_METHODS
    server: PartnerLinkServer

    def check_params(self, request: OAuth2Request, client: PartnerClient) -> None:
        # Authlib refuses a hint it does not know; §2.1 lets a server ignore the hint, and
        # ours finds any token without it, so an odd hint never keeps a token alive.
        if not request.form.get("token"):
            raise InvalidRequestError("Missing 'token'.")

    def authenticate_token(self, request: OAuth2Request, client: PartnerClient) -> _Presented:
        self.check_params(request, client)
        return _Presented(request.form["token"])

    def revoke_token(self, token: _Presented, request: OAuth2Request) -> None:
        revoke_by_token(self.server.session, partner=request.client.partner, token=token.value)


def endpoints_server(session: Session, settings: Settings) -> PartnerLinkServer:
    """The authorization server with introspection and revocation registered."""
    server = authorization_server(session, settings)
    server.register_endpoint(Introspection)
    server.register_endpoint(Revocation)
    return server
