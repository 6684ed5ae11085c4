"""Meta's side of CONTRACT §14, in Graph's documented HTTP (httpx, as the sync does).

- The login dialog: `{dialog}/{version}/dialog/oauth` (Facebook Login for Business).
- The code's exchange: `GET {graph}/{version}/oauth/access_token` (`client_id`,
  `client_secret`, `redirect_uri`, `code`), then the same path with
  `grant_type=fb_exchange_token` for a long-lived token (about 60 days, `expires_in`).
- The lists: `me/adaccounts`, `act_{id}/customaudiences` (customer lists: subtype
  CUSTOM), `act_{id}/adspixels`, each paged by `paging.next`; a new customer-list
  audience is a `POST act_{id}/customaudiences`.

Every call after the exchange carries the token in `Authorization: Bearer`; a next page
is followed only on the Graph host (a token never travels elsewhere).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlencode

import httpx

from partnerlink.db.base import utcnow
from partnerlink.destinations.ad_connections.errors import (
    PlatformRefused,
    PlatformUnavailable,
    UnknownAccount,
)
from partnerlink.settings import Settings

SCOPES = "ads_management,business_management"
MAX_PAGES = 50
# Meta's error codes for a token it no longer takes (expired, revoked, password changed).
TOKEN_CODES = frozenset({102, 190, 200, 10})


class CodeRefused(Exception):
    """Meta refused the code (used, expired or for another app)."""


@dataclass(frozen=True)
class MetaToken:
    access_token: str
    expires_at: datetime | None
    account_name: str | None


def redirect_uri(settings: Settings) -> str:
    return f"{settings.public_url}/merchant/ad-platforms/meta/callback"


def authorize_url(settings: Settings, state: str) -> str:
    query = urlencode(
        {
            "client_id": settings.meta_app_id or "",
            "redirect_uri": redirect_uri(settings),
            "state": state,
            "response_type": "code",
            "scope": SCOPES,
        }
    )
    return f"{settings.meta_dialog_url}/{settings.meta_api_version}/dialog/oauth?{query}"


def _base(settings: Settings) -> str:
    return f"{settings.meta_graph_url}/{settings.meta_api_version}"


def _get(client: httpx.Client, url: str, **kwargs: Any) -> tuple[int, dict[str, Any]]:
    try:
        response = client.get(url, **kwargs)
    except httpx.HTTPError:
        raise PlatformUnavailable() from None
    try:
        body = response.json()
    except ValueError:
        raise PlatformUnavailable() from None
    if not isinstance(body, dict):
        raise PlatformUnavailable()
    return response.status_code, body


def exchange_code(client: httpx.Client, settings: Settings, code: str) -> MetaToken:
    """The code for a short-lived token, that for a long-lived one, and whose it is."""
    app = {"client_id": settings.meta_app_id or "", "client_secret": settings.meta_app_secret or ""}
    url = f"{_base(settings)}/oauth/access_token"
    status, body = _get(
        client, url, params={**app, "redirect_uri": redirect_uri(settings), "code": code}
    )
    short = body.get("access_token")
    if status != 200 or not isinstance(short, str) or not short:
        if status >= 500 or status == 429:
            raise PlatformUnavailable()
        raise CodeRefused()
    status, body = _get(
        client,
        url,
        params={**app, "grant_type": "fb_exchange_token", "fb_exchange_token": short},
    )
    token = body.get("access_token")
    if status != 200 or not isinstance(token, str) or not token:
        raise PlatformUnavailable()
    expires_in = body.get("expires_in")
    expires_at = None
    if isinstance(expires_in, int) and not isinstance(expires_in, bool) and expires_in > 0:
        expires_at = utcnow() + timedelta(seconds=expires_in)
    else:
        expires_at = _debugged_expiry(client, settings, token)
    status, me = _get(
        client, f"{_base(settings)}/me", params={"fields": "id,name"}, headers=_auth(token)
    )
    name = me.get("name") if status == 200 else None
    return MetaToken(token, expires_at, name[:200] if isinstance(name, str) else None)


def _debugged_expiry(client: httpx.Client, settings: Settings, token: str) -> datetime | None:
    """`GET /debug_token` (with the app's token, `{app id}|{app secret}`): the token's
    `expires_at` when the exchange did not say (0: it does not expire)."""
    app_token = f"{settings.meta_app_id}|{settings.meta_app_secret}"
    status, body = _get(
        client,
        f"{_base(settings)}/debug_token",
        params={"input_token": token},
        headers=_auth(app_token),
    )
    data = body.get("data") if status == 200 else None
    seconds = data.get("expires_at") if isinstance(data, dict) else None
    if isinstance(seconds, int) and not isinstance(seconds, bool) and seconds > 0:
        return datetime.fromtimestamp(seconds, UTC)
    return None


def _auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _refusal(status: int, body: dict[str, Any]) -> Exception:
    error = body.get("error") if isinstance(body.get("error"), dict) else {}
    code = error.get("code") if isinstance(error, dict) else None
    if status in (401, 403) or code in TOKEN_CODES:
        return PlatformRefused()
    if code == 100:
        return UnknownAccount()
    return PlatformUnavailable()


def _listed(
    client: httpx.Client, settings: Settings, token: str, path: str, fields: str
) -> list[dict[str, Any]]:
    """Every item of a Graph edge, following `paging.next` on the Graph host only."""
    url: str | None = f"{_base(settings)}/{path}"
    params: dict[str, str] | None = {"fields": fields}
    items: list[dict[str, Any]] = []
    for _ in range(MAX_PAGES):
        if url is None:
            break
        status, body = _get(client, url, params=params, headers=_auth(token))
        if status != 200:
            raise _refusal(status, body)
        data = body.get("data")
        if isinstance(data, list):
            items.extend(item for item in data if isinstance(item, dict))
        paging = body.get("paging")
        following = paging.get("next") if isinstance(paging, dict) else None
        url = (
            following
            if isinstance(following, str) and following.startswith(settings.meta_graph_url + "/")
            else None
        )
        params = None  # the next page's URL carries them
    return items


def account_digits(account: str) -> str | None:
    digits = account.removeprefix("act_")
    return digits if digits.isascii() and digits.isdigit() and len(digits) <= 30 else None


def ad_accounts(client: httpx.Client, settings: Settings, token: str) -> list[dict[str, Any]]:
    return [
        {
            "id": str(item.get("id", "")).removeprefix("act_"),
            "name": item.get("name"),
            "currency": item.get("currency"),
        }
        for item in _listed(client, settings, token, "me/adaccounts", "id,name,currency")
    ]


def customer_list_audiences(
    client: httpx.Client, settings: Settings, token: str, account: str
) -> list[dict[str, Any]]:
    found = _listed(client, settings, token, f"act_{account}/customaudiences", "id,name,subtype")
    return [
        {"id": str(item.get("id")), "name": item.get("name")}
        for item in found
        if item.get("subtype") == "CUSTOM"
    ]


def datasets(
    client: httpx.Client, settings: Settings, token: str, account: str
) -> list[dict[str, Any]]:
    found = _listed(client, settings, token, f"act_{account}/adspixels", "id,name")
    return [{"id": str(item.get("id")), "name": item.get("name")} for item in found]


def create_audience(
    client: httpx.Client, settings: Settings, token: str, account: str, name: str, description: str
) -> dict[str, Any]:
    form = {
        "name": name,
        "subtype": "CUSTOM",
        "description": description,
        "customer_file_source": "USER_PROVIDED_ONLY",
    }
    try:
        response = client.post(
            f"{_base(settings)}/act_{account}/customaudiences", data=form, headers=_auth(token)
        )
        body = response.json()
    except (httpx.HTTPError, ValueError):
        raise PlatformUnavailable() from None
    if not isinstance(body, dict):
        raise PlatformUnavailable()
    audience_id = body.get("id")
    if response.status_code != 200 or not isinstance(audience_id, str) or not audience_id.isdigit():
        raise _refusal(response.status_code, body)
    return {"id": audience_id, "name": name}
