"""The bearer dependency of the data endpoints (6–10)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Query, Request
from fastapi.security import HTTPBearer
from starlette.datastructures import QueryParams
from starlette.types import Scope

from partnerlink.deps import SessionDep, bearer_credentials
from partnerlink.tokens.service import ConnectedStore, authenticate_access_token

# Only for the OpenAPI description ("Authorize" button in /docs); we parse the header ourselves
# so that a missing token answers 403 with our problem body.
bearer_scheme = HTTPBearer(auto_error=False, description="Store access token")


@dataclass(frozen=True, slots=True)
class QueryCredentials:
    access_token: str = ""
    client_id: str = ""
    client_secret: str = ""


_QUERY_CREDENTIALS = "partnerlink.query_credentials"


def query_credentials(scope: Scope) -> QueryCredentials:
    """The credentials in a request's query, read once and kept in its scope: the partner
    quota (tokens/quota.py) and the route name the same partner from them.

    Read as every route reads its query (Starlette's QueryParams, which FastAPI's `Query`
    parameters read too): the bytes as latin-1, then `urllib.parse.parse_qsl`, which
    percent-decodes names, so `?access%5Ftoken=` is the legacy token and `client%5Fid` a
    client id; a repeated name means its last value. The log redaction decodes names as
    parse_qsl does, and more (security/redaction.py): what is read here is redacted there.
    """
    found = scope.get(_QUERY_CREDENTIALS)
    if found is None:
        params = QueryParams(scope["query_string"])
        found = scope[_QUERY_CREDENTIALS] = QueryCredentials(
            params.get("access_token", ""),
            params.get("client_id", ""),
            params.get("client_secret", ""),
        )
    return found


def presented_access_token(request: Request) -> str:
    """The token from `Authorization: Bearer`, else the legacy `?access_token=`."""
    return bearer_credentials(request.headers.get("authorization", "")) or (
        query_credentials(request.scope).access_token
    )


def current_store(
    request: Request, session: SessionDep, _doc: Annotated[object, Depends(bearer_scheme)] = None
) -> ConnectedStore:
    return authenticate_access_token(session, presented_access_token(request))


CurrentStore = Annotated[ConnectedStore, Depends(current_store)]

# Documented only (current_store reads it): the legacy way to send the token. New
# integrations send the Bearer header. Routes add `_legacy_token: LegacyAccessToken = None`.
_LEGACY_TOKEN_DESCRIPTION = (
    "Legacy way to send the store access token; use the Authorization header."
)
LegacyAccessToken = Annotated[
    str | None,
    Query(
        alias="access_token",
        deprecated=True,
        description=_LEGACY_TOKEN_DESCRIPTION,
    ),
]

# The same two, for a route that reads the token itself (the hottest one: POST /v1/orders)
# and only documents them: `openapi_extra=BEARER_DOCS`.
BEARER_DOCS = {
    "security": [{bearer_scheme.scheme_name: []}],
    "parameters": [
        {
            "name": "access_token",
            "in": "query",
            "required": False,
            "deprecated": True,
            "description": _LEGACY_TOKEN_DESCRIPTION,
            "schema": {"anyOf": [{"type": "string"}, {"type": "null"}], "title": "Access Token"},
        }
    ],
}
