"""OAuth 2.0's token, introspection and revocation endpoints, and the server's metadata
(CONTRACT §13).

The three endpoints read a form body (RFC 6749 §4.1.3, RFC 7662 §2.1, RFC 7009 §2.1),
authenticate the partner by HTTP Basic or in the form, and answer RFC 6749's JSON,
errors included (`error`, `error_description`, and `code` equal to `error`). Authlib
does the protocol (connect/oauth_server.py, connect/oauth_endpoints.py); a refused
request still commits, so that a reused code's revocation holds.
"""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import parse_qsl

from authlib.oauth2.rfc8414 import AuthorizationServerMetadata
from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import JSONResponse

from partnerlink.connect.oauth_endpoints import endpoints_server
from partnerlink.connect.oauth_schemas import (
    FORM,
    INTROSPECT_FORM,
    REVOKE_FORM,
    TOKEN_FORM,
    OAuthIntrospection,
    OAuthRevoked,
    OAuthToken,
    oauth_responses,
)
from partnerlink.connect.oauth_server import (
    AUTH_METHODS,
    GRANT_TYPES,
    SCOPES,
    HttpRequest,
    PartnerLinkServer,
    as_response,
    authorization_server,
)
from partnerlink.deps import SessionDep, SettingsDep
from partnerlink.settings import Settings

# In the partner API's document with their own bodies: RFC 6749's, not CONTRACT §3's
# problems (apidocs adds only what the middleware answers: 413, 429, 500).
router = APIRouter(tags=["OAuth 2.0"])
metadata_router = APIRouter(include_in_schema=False)
TOKEN_PATH = "/v1/oauth/token"

_MALFORMED = (
    400,
    {"error": "invalid_request", "error_description": "The body must be a UTF-8 form."},
    [("Cache-Control", "no-store")],
)


async def oauth_http_request(request: Request) -> HttpRequest | None:
    """The request with its form parameters; None when the body is not a readable form."""
    body = await request.body()
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    params: list[tuple[str, str]] = []
    if body:
        if content_type != FORM:
            return None
        try:
            params = parse_qsl(body.decode("utf-8"), keep_blank_values=True, strict_parsing=False)
        except (UnicodeDecodeError, ValueError):
            return None
    return HttpRequest(request.method, str(request.url), request.headers, params)


OAuthRequest = Annotated[HttpRequest | None, Depends(oauth_http_request)]


@router.post(
    "/oauth/token",
    summary="OAuth 2.0 token endpoint (authorization code with PKCE, refresh)",
    description="RFC 6749 §4.1.3 and §6. Form body; client authentication by HTTP Basic "
    "or `client_id`/`client_secret` in the form. Answers `access_token`, `token_type` "
    "(Bearer), `expires_in`, `refresh_token`, `storeId`; errors are RFC 6749 §5.2 bodies. "
    "A code works once, within a minute: presented again, it revokes what it issued.",
    openapi_extra=TOKEN_FORM,
    responses=oauth_responses(OAuthToken, "The tokens (RFC 6749 §5.1)."),
)
def token(session: SessionDep, settings: SettingsDep, http: OAuthRequest) -> Response:
    return _answer(http, authorization_server(session, settings), None)


@router.post(
    "/oauth/introspect",
    summary="OAuth 2.0 token introspection (RFC 7662)",
    description="Form body `token` (and optional `token_type_hint`); client authentication "
    "as for the token endpoint, 401 without it. Another partner's token, or a dead one, "
    'answers `{"active": false}`. A refresh token has no `token_type` (RFC 6749 §7.1 '
    "types say how an access token is presented).",
    openapi_extra=INTROSPECT_FORM,
    responses=oauth_responses(OAuthIntrospection, "What the token is (RFC 7662 §2.2)."),
)
def introspect(session: SessionDep, settings: SettingsDep, http: OAuthRequest) -> Response:
    return _answer(http, endpoints_server(session, settings), "introspection")


@router.post(
    "/oauth/revoke",
    summary="OAuth 2.0 token revocation (RFC 7009)",
    description="Form body `token` (an access or refresh token) and optional "
    "`token_type_hint`; client authentication as for the token endpoint. Revokes the "
    "token's whole connection: its access and refresh tokens are refused from now on, as "
    "when the merchant disconnects, and you get `connection.revoked` (reason `partner`). "
    "A token that is unknown, already revoked or not yours also answers 200 and changes "
    "nothing, so a retry is harmless.",
    openapi_extra=REVOKE_FORM,
    responses=oauth_responses(OAuthRevoked, "Revoked, or nothing to revoke (RFC 7009 §2.2)."),
)
def revoke(session: SessionDep, settings: SettingsDep, http: OAuthRequest) -> Response:
    return _answer(http, endpoints_server(session, settings), "revocation")


def _answer(http: HttpRequest | None, server: PartnerLinkServer, endpoint: str | None) -> Response:
    """The token endpoint's answer (`endpoint` None), or that of the named endpoint."""
    if http is None:
        return as_response(_MALFORMED)
    try:
        if endpoint is None:
            return as_response(server.create_token_response(http))
        return as_response(server.create_endpoint_response(endpoint, http))
    except ValueError:  # Authlib refuses to echo unprintable input in an error description
        return as_response(_MALFORMED)


@metadata_router.get("/.well-known/oauth-authorization-server")
def server_metadata(settings: SettingsDep) -> JSONResponse:
    """RFC 8414: where the endpoints are and what they support."""
    return JSONResponse(dict(metadata(settings)))


def metadata(settings: Settings) -> AuthorizationServerMetadata:
    """RFC 8414's document; the issuer is the public URL (https in production)."""
    base = settings.public_url
    document = AuthorizationServerMetadata(
        {
            "issuer": base,
            "authorization_endpoint": f"{settings.effective_connect_url}/oauth/authorize",
            "token_endpoint": f"{base}{TOKEN_PATH}",
            "introspection_endpoint": f"{base}/v1/oauth/introspect",
            "revocation_endpoint": f"{base}/v1/oauth/revoke",
            "scopes_supported": list(SCOPES),
            "response_types_supported": ["code"],
            "response_modes_supported": ["query"],
            "grant_types_supported": list(GRANT_TYPES),
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": AUTH_METHODS,
            "introspection_endpoint_auth_methods_supported": AUTH_METHODS,
            "revocation_endpoint_auth_methods_supported": AUTH_METHODS,
            "service_documentation": f"{base}/docs",
        }
    )
    # RFC 8414 wants https addresses; the one-box default is plain http, checked otherwise.
    if all(url.lower().startswith("https://") for url in (base, settings.effective_connect_url)):
        document.validate()
    return document


def security_scheme(settings: Settings) -> dict[str, Any]:
    """The OpenAPI `securitySchemes` entry of this flow, at the metadata's addresses.

    The authorization endpoint is absolute ({connect_url} may be a host of its own); the
    token endpoint is relative, resolved against the document's own address, which is
    the API's wherever it is deployed.
    """
    return {
        "type": "oauth2",
        "description": "Authorization code with PKCE (S256), at the consent screen: "
        "register `{public_url}/docs/oauth2-redirect` with `partners update --redirect-uri` "
        "to sign in here, then enter your client id and secret.",
        "flows": {
            "authorizationCode": {
                "authorizationUrl": f"{settings.effective_connect_url}/oauth/authorize",
                "tokenUrl": TOKEN_PATH,
                "refreshUrl": TOKEN_PATH,
                "scopes": SCOPES,
            }
        },
    }
