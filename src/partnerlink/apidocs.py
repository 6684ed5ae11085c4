"""The API references: the partner API (/docs, /openapi.json) and the merchant JSON API
(/merchant/api/docs, /merchant/api/openapi.json), each an OpenAPI document of its own.

Swagger UI is served from the files the `fastapi-offline` package installs, so /docs works
without internet; it signs in with the OAuth flow (PKCE) through its redirect page, which
FastAPI writes inline, so that is served from here too. Every operation lists the problem
bodies it can answer: its route names its own errors (`problem_responses`); the ones every
route shares (the request's own validation, the body limit, the unexpected error, and on
the partner API the quota's 429 with its headers) are added here, once.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import fastapi_offline
from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from fastapi.openapi.utils import get_openapi
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from starlette.routing import BaseRoute

from partnerlink import __version__
from partnerlink.merchant.deps import NotSignedIn
from partnerlink.problems import (
    InternalError,
    InvalidToken,
    NotFound,
    PayloadTooLarge,
    RateLimited,
    ValidationFailed,
    add_problem_example,
    problem_example,
)

PARTNER_OPENAPI_URL = "/openapi.json"
PARTNER_DOCS_URL = "/docs"
OAUTH2_REDIRECT_URL = "/docs/oauth2-redirect"
OAUTH_SCHEME = "OAuth2"
MERCHANT_API_PREFIX = "/merchant/api"
MERCHANT_OPENAPI_URL = f"{MERCHANT_API_PREFIX}/openapi.json"
MERCHANT_DOCS_URL = f"{MERCHANT_API_PREFIX}/docs"
ASSETS_URL = "/docs/assets"
SWAGGER_ASSETS_DIR = Path(fastapi_offline.__file__).parent / "static"

PARTNER_TAGS = (
    "Consent-screen flow",
    "Pairing-code flow",
    "Stores",
    "Customers",
    "Orders",
    "Partner platform",
    "OAuth 2.0",
)

PROBLEM_SCHEMA: dict[str, Any] = {
    "title": "Problem",
    "description": "Every non-2xx answer: `application/problem+json` (RFC 9457) with a "
    "stable `code`. It never contains a secret, a token or a stack trace.",
    "type": "object",
    "required": ["type", "title", "status", "detail", "code", "success"],
    "properties": {
        "type": {"type": "string", "examples": ["about:blank"]},
        "title": {"type": "string", "description": "The status's reason phrase."},
        "status": {"type": "integer", "description": "The HTTP status, repeated."},
        "detail": {"type": "string", "description": "What went wrong, for people."},
        "code": {"type": "string", "description": "Stable machine-readable word."},
        "errors": {
            "type": "array",
            "description": "Validation failures only: one entry per bad field.",
            "items": {
                "type": "object",
                "required": ["field", "message"],
                "properties": {"field": {"type": "string"}, "message": {"type": "string"}},
            },
        },
        "success": {"type": "boolean", "description": "Always false."},
    },
}

PARTNER_DESCRIPTION = """
The partner API of PartnerLink. Connect a merchant's store by the **consent-screen
flow** (endpoints 1–4) or the **pairing-code flow** (endpoint 5), then keep the
store profile in sync, upload the customer list and stream every order.

Data endpoints take the store access token as `Authorization: Bearer <token>`
(the legacy query parameter `?access_token=` is still accepted, but puts the token
in logs and histories: new integrations send the header).

**Errors.** Every non-2xx answer is `application/problem+json` (schema `Problem`)
with a stable `code`; a refused request stores nothing. Besides what each operation
lists:

| Status | `code` | When |
|---|---|---|
| 400 | `missing_field`, `invalid_field` | a required field or parameter is missing, or one is malformed (`errors` names each) |
| 400 | `malformed_request` | a body that is not decodable JSON at all |
| 403 | `missing_version_prefix` | a path without the `/v1` prefix (`/stores`, `/auth/integration`, ...) |
| 403 | `invalid_token` | a data endpoint without a valid access token (missing, malformed, expired, revoked) |
| 404 | `not_found` | an unknown path under `/v1/` |
| 405 | `method_not_allowed` | a method the path does not take |
| 413 | `payload_too_large` | a JSON body over 1 MiB (`PARTNERLINK_MAX_BODY_BYTES`), a customer file over 1 GiB |
| 429 | `rate_limited` | over your quota of requests a minute; retry after `Retry-After` seconds |
| 500 | `internal_error` | unexpected; safe to retry with exponential backoff |
| 500 | `unavailable` | `POST /v1/orders` only: the order cannot be taken now; retry after `Retry-After` seconds |

**Handling rules.** 400 is not retried unchanged. On 403 a data-endpoint caller refreshes
the access token (`POST /v1/auth/token`) and, if that fails too, runs the connection flow
again. 404 and 410 are not retried blindly. 500 is retried with exponential backoff.
Re-sending an order with the same `orderId` updates it, so retries are safe.

**Rate limits.** Every answer to a request that names you (by an access token or by your
client credentials) carries `RateLimit-Policy` (your quota `q` in a window of `w` seconds)
and `RateLimit` (`r` left, `t` seconds to the reset); over the quota it is 429
`rate_limited` with `Retry-After`. **Idempotency.** `POST /v1/orders/batch` takes an
`Idempotency-Key`: the same key and body within 24 h answers the first answer again with
`Idempotent-Replayed: true`. **OAuth 2.0** (authorization code with PKCE) gets the same
tokens as the consent-screen flow: see the `OAuth2` security scheme and
`/.well-known/oauth-authorization-server`; the webhook events are under `webhooks`.

The merchant JSON API has its own reference at [/merchant/api/docs](/merchant/api/docs).
"""

MERCHANT_DESCRIPTION = """
The merchant JSON API of PartnerLink, used by the merchant console and by a merchant
mobile app: profiles and stores, e-receipts on or off, pairing codes, connections and
their revocation, orders, customers, and approving a partner's consent without a browser.

Sign in with `POST /merchant/api/sessions` (`{"email", "password"}`), then send
`Authorization: Bearer <sessionToken>`. A merchant sees and changes only its own profiles,
stores, connections and customers; anything else answers 404. Every non-2xx answer is
`application/problem+json` (schema `Problem`) with a stable `code`.

The partner API has its own reference at [/docs](/docs).
"""


def install_api_docs(app: FastAPI, *, oauth_scheme: dict[str, Any] | None = None) -> None:
    """Serves both references and Swagger UI's assets; `app.openapi()` is the partner one.

    `oauth_scheme` is the partner API's OAuth 2.0 security scheme (connect/oauth_api.py):
    data endpoints take its tokens as they take the consent flow's.
    """
    app.mount(ASSETS_URL, StaticFiles(directory=SWAGGER_ASSETS_DIR), name="swagger-assets")

    def partner_openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = build_openapi(
                app,
                title="PartnerLink partner API",
                description=PARTNER_DESCRIPTION,
                prefix="/v1/",
                tags=PARTNER_TAGS,
                shared=_partner_shared_problems,
                webhooks=app.webhooks.routes,
            )
            _document_partner_headers(schema)
            if oauth_scheme is not None:
                _add_oauth_scheme(schema, oauth_scheme)
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = partner_openapi  # type: ignore[method-assign]
    merchant_schema: dict[str, Any] = {}

    async def merchant_openapi() -> JSONResponse:
        if not merchant_schema:
            merchant_schema.update(
                build_openapi(
                    app,
                    title="PartnerLink merchant API",
                    description=MERCHANT_DESCRIPTION,
                    prefix=f"{MERCHANT_API_PREFIX}/",
                    tags=(),
                    shared=_merchant_shared_problems,
                )
            )
        return JSONResponse(merchant_schema)

    async def partner_docs() -> HTMLResponse:
        return swagger_page(PARTNER_OPENAPI_URL, "PartnerLink partner API", oauth=True)

    async def oauth2_redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()

    async def merchant_docs() -> HTMLResponse:
        return swagger_page(MERCHANT_OPENAPI_URL, "PartnerLink merchant API")

    app.add_api_route(PARTNER_DOCS_URL, partner_docs, methods=["GET"], include_in_schema=False)
    app.add_api_route(
        OAUTH2_REDIRECT_URL, oauth2_redirect, methods=["GET"], include_in_schema=False
    )
    app.add_api_route(MERCHANT_DOCS_URL, merchant_docs, methods=["GET"], include_in_schema=False)
    app.add_api_route(
        MERCHANT_OPENAPI_URL, merchant_openapi, methods=["GET"], include_in_schema=False
    )


def swagger_page(openapi_url: str, title: str, *, oauth: bool = False) -> HTMLResponse:
    """Swagger UI with its script, style and icon from this server, never from a CDN.

    With `oauth`, its Authorize dialog runs the authorization code flow with PKCE (S256,
    which the server requires) and comes back to the redirect page served beside it.
    """
    return get_swagger_ui_html(
        openapi_url=openapi_url,
        title=title,
        swagger_js_url=f"{ASSETS_URL}/swagger-ui-bundle.js",
        swagger_css_url=f"{ASSETS_URL}/swagger-ui.css",
        swagger_favicon_url="/static/favicon.svg",
        oauth2_redirect_url=OAUTH2_REDIRECT_URL if oauth else None,
        init_oauth={"usePkceWithAuthorizationCodeGrant": True} if oauth else None,
    )


def build_openapi(
    app: FastAPI,
    *,
    title: str,
    description: str,
    prefix: str,
    tags: tuple[str, ...],
    shared: Any,
    webhooks: Sequence[BaseRoute] = (),
) -> dict[str, Any]:
    """The OpenAPI document of the routes under `prefix`, each listing its problem bodies."""
    schema = get_openapi(
        title=title,
        version=__version__,
        description=description,
        routes=app.routes,
        webhooks=webhooks or None,
        tags=[{"name": name} for name in tags] or None,
    )
    schema["paths"] = {
        path: item for path, item in schema.get("paths", {}).items() if path.startswith(prefix)
    }
    for path, path_item in schema.get("paths", {}).items():
        for operation in path_item.values():
            responses = operation.setdefault("responses", {})
            # Our validation failures answer 400 problem+json, never FastAPI's 422.
            responses.pop("422", None)
            for body in shared(path, operation):
                add_problem_example(responses, body)
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    components.pop("HTTPValidationError", None)
    components.pop("ValidationError", None)
    components["Problem"] = PROBLEM_SCHEMA
    _drop_unused_schemas(schema)
    return schema


def _drop_unused_schemas(schema: dict[str, Any]) -> None:
    """Keeps only the component schemas the document's paths reach (the other API's stay out)."""
    components: dict[str, Any] = schema["components"]["schemas"]
    reached: set[str] = set()
    pending = [schema["paths"], schema.get("webhooks", {})]
    while pending:
        text = json.dumps(pending.pop())
        for name in _SCHEMA_REF.findall(text):
            if name not in reached and name in components:
                reached.add(name)
                pending.append(components[name])
    schema["components"]["schemas"] = {
        name: value for name, value in components.items() if name in reached
    }


_SCHEMA_REF = re.compile(r'"#/components/schemas/([^"]+)"')


_MALFORMED = ValidationFailed("A parameter is malformed.")


def _common_problems(operation: dict[str, Any]) -> list[dict[str, Any]]:
    """What any route can answer: its input refused, its body too large, the unexpected."""
    bodies = []
    if "400" not in operation["responses"]:
        bodies.append(problem_example(_MALFORMED))
    if operation.get("requestBody"):
        bodies.append(problem_example(PayloadTooLarge))
    bodies.append(problem_example(InternalError))
    return bodies


def _partner_shared_problems(path: str, operation: dict[str, Any]) -> list[dict[str, Any]]:
    bodies = _common_problems(operation)
    if operation.get("security"):
        bodies.append(problem_example(InvalidToken))
    if _names_partner(path, operation):
        bodies.append(problem_example(_OVER_QUOTA))
    return bodies


_OVER_QUOTA = RateLimited(42, "Over your quota of 60000 requests a minute; retry after the reset.")


def _names_partner(path: str, operation: dict[str, Any]) -> bool:
    """A request that names a partner (an access token, client credentials) counts against
    its quota (tokens/quota.py): the OAuth endpoints, and any route taking either."""
    names = {parameter["name"] for parameter in operation.get("parameters", [])}
    return path.startswith("/v1/oauth/") or bool(operation.get("security")) or "client_id" in names


# Response headers the middleware and the idempotency records add (CONTRACT §13).
_HEADERS: dict[str, Any] = {
    "RateLimit-Policy": {
        "description": "Your quota, when the request names you (IETF httpapi draft): "
        '`"default";q=<requests>;w=<window seconds>`.',
        "schema": {"type": "string", "examples": ['"default";q=60000;w=60']},
    },
    "RateLimit": {
        "description": "What is left of it, when the request names you: "
        '`"default";r=<remaining>;t=<seconds to the reset>`.',
        "schema": {"type": "string", "examples": ['"default";r=59990;t=42']},
    },
    "Retry-After": {
        "description": "Seconds to wait before sending again.",
        "schema": {"type": "integer", "minimum": 1},
    },
    "Idempotent-Replayed": {
        "description": "`true` when this is the first answer to the same `Idempotency-Key` "
        "and body, answered again: nothing was applied this time.",
        "schema": {"type": "string", "enum": ["true"]},
    },
}


def _header_ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/headers/{name}"}


def _document_partner_headers(schema: dict[str, Any]) -> None:
    """The quota's headers on every answer of an operation that names a partner,
    `Retry-After` on every 429, `Idempotent-Replayed` where an `Idempotency-Key` is taken."""
    schema["components"]["headers"] = _HEADERS
    for path, path_item in schema["paths"].items():
        for operation in path_item.values():
            names_partner = _names_partner(path, operation)
            keyed = any(p["name"] == "Idempotency-Key" for p in operation.get("parameters", []))
            for status, response in operation["responses"].items():
                headers = response.setdefault("headers", {})
                if names_partner:
                    headers.update(
                        {name: _header_ref(name) for name in ("RateLimit-Policy", "RateLimit")}
                    )
                if str(status) == "429":
                    headers["Retry-After"] = _header_ref("Retry-After")
                if keyed and str(status).startswith("2"):
                    headers["Idempotent-Replayed"] = _header_ref("Idempotent-Replayed")
                if not headers:
                    del response["headers"]


def _add_oauth_scheme(schema: dict[str, Any], scheme: dict[str, Any]) -> None:
    """The OAuth 2.0 scheme, and its tokens as the other way to call each data endpoint."""
    schema["components"].setdefault("securitySchemes", {})[OAUTH_SCHEME] = scheme
    scopes = list(scheme["flows"]["authorizationCode"]["scopes"])
    for path_item in schema["paths"].values():
        for operation in path_item.values():
            if operation.get("security"):
                operation["security"].append({OAUTH_SCHEME: scopes})


def _merchant_shared_problems(path: str, operation: dict[str, Any]) -> list[dict[str, Any]]:
    bodies = _common_problems(operation)
    if not path.endswith("/sessions"):
        bodies.append(problem_example(NotSignedIn))
    if "{" in path:
        bodies.append(problem_example(NotFound))
    return bodies
