"""OAuth 2.0's token and introspection endpoints, and the server's metadata (CONTRACT §13).

Both endpoints read a form body (RFC 6749 §4.1.3, RFC 7662 §2.1), authenticate
the partner by HTTP Basic or in the form, and answer RFC 6749's JSON, errors
included (`error`, `error_description`, and `code` equal to `error`). Authlib
does the protocol (connect/oauth_server.py); a refused request still commits,
so that a reused code's revocation holds.
"""

from __future__ import annotations

from typing import Annotated
from urllib.parse import parse_qsl

from authlib.oauth2.rfc8414 import AuthorizationServerMetadata
from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import JSONResponse

from partnerlink.connect.oauth_server import (
    AUTH_METHODS,
    GRANT_TYPES,
    HttpRequest,
    as_response,
    authorization_server,
)
from partnerlink.deps import SessionDep, SettingsDep
from partnerlink.settings import Settings

# Outside the OpenAPI document, whose every error is a CONTRACT §3 problem: these answer
# RFC 6749's bodies, and the metadata below is their machine-readable description.
router = APIRouter(include_in_schema=False)
metadata_router = APIRouter(include_in_schema=False)

FORM = "application/x-www-form-urlencoded"
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
    "(Bearer), `expires_in`, `refresh_token`, `storeId`; errors are RFC 6749 §5.2 bodies.",
)
def token(session: SessionDep, settings: SettingsDep, http: OAuthRequest) -> Response:
    if http is None:
        return as_response(_MALFORMED)
    server = authorization_server(session, settings)
    try:
        return as_response(server.create_token_response(http))
    except ValueError:  # Authlib refuses to echo unprintable input in an error description
        return as_response(_MALFORMED)


@router.post(
    "/oauth/introspect",
    summary="OAuth 2.0 token introspection (RFC 7662)",
    description="Form body `token` (and optional `token_type_hint`); client authentication "
    "as for the token endpoint, 401 without it. Another partner's token, or a dead one, "
    'answers `{"active": false}`.',
)
def introspect(session: SessionDep, settings: SettingsDep, http: OAuthRequest) -> Response:
    if http is None:
        return as_response(_MALFORMED)
    server = authorization_server(session, settings)
    try:
        return as_response(server.create_endpoint_response("introspection", http))
    except ValueError:
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
            "token_endpoint": f"{base}/v1/oauth/token",
            "introspection_endpoint": f"{base}/v1/oauth/introspect",
            "response_types_supported": ["code"],
            "response_modes_supported": ["query"],
            "grant_types_supported": list(GRANT_TYPES),
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": AUTH_METHODS,
            "introspection_endpoint_auth_methods_supported": AUTH_METHODS,
            "service_documentation": f"{base}/docs",
        }
    )
    # RFC 8414 wants https addresses; the one-box default is plain http, checked otherwise.
    if all(url.lower().startswith("https://") for url in (base, settings.effective_connect_url)):
        document.validate()
    return document
