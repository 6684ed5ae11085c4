"""The OAuth endpoints' shapes as the OpenAPI document shows them (CONTRACT §13).

The endpoints read their form bodies themselves (Authlib checks them and answers RFC
6749's errors, never §3's problems), so these models describe, they do not validate:
the request bodies go into the document through `openapi_extra`, the answers through
`responses`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

FORM = "application/x-www-form-urlencoded"
_ACCESS_EXAMPLE = "plk_at_5q6EkdITGsitG-u4erSfa1wJBe_5C1mW_N4LEg15csk"
_REFRESH_EXAMPLE = "plk_rt_Z2BOUjHvmFXH-OGv9DEitoMn8hyCLvWFKpM-dLHf8U8"

_CLIENT_FIELDS: dict[str, Any] = {
    "client_id": {
        "type": "string",
        "description": "`client_secret_post`: your client id here, or HTTP Basic instead.",
    },
    "client_secret": {
        "type": "string",
        "description": "`client_secret_post`: your client secret here, or HTTP Basic instead.",
    },
}


def form_body(title: str, required: list[str], fields: dict[str, Any]) -> dict[str, Any]:
    """`openapi_extra` for a form body with these fields, client authentication included."""
    schema = {
        "title": title,
        "type": "object",
        "required": required,
        "properties": {**fields, **_CLIENT_FIELDS},
    }
    return {"requestBody": {"required": True, "content": {FORM: {"schema": schema}}}}


TOKEN_FORM = form_body(
    "OAuthTokenRequest",
    ["grant_type"],
    {
        "grant_type": {"type": "string", "enum": ["authorization_code", "refresh_token"]},
        "code": {"type": "string", "description": "authorization_code: the redirect's `code`."},
        "redirect_uri": {
            "type": "string",
            "description": "authorization_code: the `redirect_uri` of the authorization "
            "request, when it named one.",
        },
        "code_verifier": {
            "type": "string",
            "description": "authorization_code: the PKCE verifier whose S256 challenge the "
            "authorization request sent (RFC 7636).",
        },
        "refresh_token": {"type": "string", "description": "refresh_token: the refresh token."},
    },
)
_TOKEN_FIELDS: dict[str, Any] = {
    "token": {"type": "string", "description": "An access or a refresh token."},
    "token_type_hint": {
        "type": "string",
        "enum": ["access_token", "refresh_token"],
        "description": "Optional: the token is found whatever its kind.",
    },
}
INTROSPECT_FORM = form_body("OAuthIntrospectionRequest", ["token"], _TOKEN_FIELDS)
REVOKE_FORM = form_body("OAuthRevocationRequest", ["token"], _TOKEN_FIELDS)


class OAuthToken(BaseModel):
    """RFC 6749 §5.1's answer, plus the store the tokens reach."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "access_token": _ACCESS_EXAMPLE,
                    "token_type": "Bearer",
                    "expires_in": 31536000,
                    "refresh_token": _REFRESH_EXAMPLE,
                    "storeId": "0b6a3c1e5f2d4a7b9c8d1e2f3a4b5c6d",
                }
            ]
        }
    )

    access_token: str
    token_type: Literal["Bearer"]
    expires_in: int = Field(description="Seconds the access token lives (a year).")
    refresh_token: str = Field(description="Lives as long as the connection (SPEC).")
    storeId: str


class OAuthIntrospection(BaseModel):
    """RFC 7662 §2.2. A token that is not live, or not yours, is only `{"active": false}`."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "active": True,
                    "client_id": "plk_ci_7cDsol-jrEoN8cDQVRl0voyiMWxBhqUEdGSM1YQKW-8",
                    "scope": "store",
                    "token_type": "Bearer",
                    "iat": 1764000000,
                    "exp": 1795536000,
                    "storeId": "0b6a3c1e5f2d4a7b9c8d1e2f3a4b5c6d",
                    "method": "consent",
                }
            ]
        }
    )

    active: bool
    client_id: str | None = None
    scope: str | None = None
    token_type: Literal["Bearer"] | None = Field(
        None, description="An access token's; a refresh token has none (RFC 6749 §7.1)."
    )
    iat: int | None = None
    exp: int | None = Field(None, description="Absent for tokens that do not expire.")
    storeId: str | None = None
    method: Literal["consent", "pairing"] | None = None


class OAuthRevoked(BaseModel):
    """RFC 7009 §2.2: 200 with an empty object, whether or not there was a live token."""

    model_config = ConfigDict(json_schema_extra={"examples": [{}]})


class OAuthError(BaseModel):
    """RFC 6749 §5.2's error, with `code` equal to `error` (CONTRACT §3's readers)."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "error": "invalid_grant",
                    "error_description": "The code was already used or has expired.",
                    "code": "invalid_grant",
                }
            ]
        }
    )

    error: str = Field(
        description="`invalid_request`, `invalid_client`, `invalid_grant`, "
        "`unauthorized_client`, `unsupported_grant_type`, ..."
    )
    error_description: str | None = None
    code: str = Field(description="The same word as `error`.")


def oauth_responses(answer: type[BaseModel], description: str) -> dict[int | str, Any]:
    """`responses=`: the answer, and RFC 6749's errors (400, and 401 for client authentication)."""
    error = {"model": OAuthError, "content": {"application/json": {}}}
    return {
        200: {"model": answer, "description": description},
        400: {
            **error,
            "description": "RFC 6749 §5.2 error: `invalid_request`, `invalid_grant`, ...",
        },
        401: {**error, "description": "`invalid_client`: client authentication failed."},
    }
