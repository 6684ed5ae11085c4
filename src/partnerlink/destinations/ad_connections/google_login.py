"""Google's side of CONTRACT §14: the authorization code flow with PKCE and the
`datamanager` scope, and the Data Manager API's user lists (UserListService, v1.5+).

- `{google_auth_url}?client_id&redirect_uri&response_type=code&scope&access_type=offline
  &prompt=consent&state&code_challenge&code_challenge_method=S256`.
- The code at `{google_token_url}` (`grant_type=authorization_code`, `code`,
  `redirect_uri`, `client_id`, `client_secret`, `code_verifier`): the refresh token is
  kept; later calls use §11's refresh grant with the operator's client.
- `GET|POST {datamanager}/v1/accountTypes/GOOGLE_ADS/accounts/{id}/userLists` (paged by
  `nextPageToken`); a new list is a Customer Match list of contact information.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from typing import Any
from urllib.parse import urlencode

import httpx

from partnerlink.destinations.ad_connections.errors import (
    PlatformRefused,
    PlatformUnavailable,
    UnknownAccount,
)
from partnerlink.destinations.google_oauth import GoogleCredentials, TokenCache, access_token
from partnerlink.destinations.platform import PlatformError
from partnerlink.settings import Settings

SCOPE = "https://www.googleapis.com/auth/datamanager"
MAX_PAGES = 50
TOKENS = TokenCache()


class CodeRefused(Exception):
    """Google refused the code (used, expired, another client or verifier)."""


def redirect_uri(settings: Settings) -> str:
    return f"{settings.public_url}/merchant/ad-platforms/google/callback"


def new_verifier() -> str:
    return secrets.token_urlsafe(48)  # 64 characters: RFC 7636 asks for 43-128


def challenge(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def authorize_url(settings: Settings, state: str, verifier: str) -> str:
    query = urlencode(
        {
            "client_id": settings.google_client_id or "",
            "redirect_uri": redirect_uri(settings),
            "response_type": "code",
            "scope": SCOPE,
            "access_type": "offline",
            "prompt": "consent",
            "state": state,
            "code_challenge": challenge(verifier),
            "code_challenge_method": "S256",
        }
    )
    return f"{settings.google_auth_url}?{query}"


def exchange_code(client: httpx.Client, settings: Settings, code: str, verifier: str) -> str:
    """The refresh token the code stands for."""
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": redirect_uri(settings),
        "client_id": settings.google_client_id or "",
        "client_secret": settings.google_client_secret or "",
        "code_verifier": verifier,
    }
    try:
        response = client.post(settings.google_token_url, data=form)
        body = response.json()
    except (httpx.HTTPError, ValueError):
        raise PlatformUnavailable() from None
    if response.status_code >= 500 or response.status_code == 429:
        raise PlatformUnavailable()
    refresh = body.get("refresh_token") if isinstance(body, dict) else None
    if response.status_code != 200 or not isinstance(refresh, str) or not refresh:
        raise CodeRefused()
    return refresh


def _bearer(client: httpx.Client, settings: Settings, refresh_token: str) -> dict[str, str]:
    credentials = GoogleCredentials(
        settings.google_client_id or "", settings.google_client_secret or "", refresh_token
    )
    try:
        token = access_token(client, settings.google_token_url, credentials, TOKENS)
    except PlatformError as error:
        if error.kind == "credentials":
            raise PlatformRefused() from None
        raise PlatformUnavailable() from None
    return {"Authorization": f"Bearer {token}"}


def _lists_url(settings: Settings, customer_id: str) -> str:
    return f"{settings.google_datamanager_url}/v1/accountTypes/GOOGLE_ADS/accounts/{customer_id}/userLists"


def _answer(response: httpx.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        raise PlatformUnavailable() from None
    if response.status_code in (401,):
        raise PlatformRefused()
    if response.status_code in (403, 404):
        raise UnknownAccount()
    if response.status_code != 200 or not isinstance(body, dict):
        raise PlatformUnavailable()
    return body


def is_contact_list(user_list: dict[str, Any]) -> bool:
    info = user_list.get("ingestedUserListInfo")
    return isinstance(info, dict) and "CONTACT_ID" in (info.get("uploadKeyTypes") or [])


def user_lists(
    client: httpx.Client, settings: Settings, refresh_token: str, customer_id: str
) -> list[dict[str, Any]]:
    """The account's Customer Match lists of contact information."""
    headers = _bearer(client, settings, refresh_token)
    found: list[dict[str, Any]] = []
    page: str | None = None
    for _ in range(MAX_PAGES):
        params = {"pageToken": page} if page else {}
        try:
            response = client.get(_lists_url(settings, customer_id), params=params, headers=headers)
        except httpx.HTTPError:
            raise PlatformUnavailable() from None
        body = _answer(response)
        for item in body.get("userLists") or []:
            if isinstance(item, dict) and is_contact_list(item):
                found.append({"id": str(item.get("id")), "name": item.get("displayName")})
        following = body.get("nextPageToken")
        if not isinstance(following, str) or not following:
            break
        page = following
    return found


def user_list_body(name: str, description: str) -> dict[str, Any]:
    """A UserList (google.ads.datamanager.v1) of contact information, as JSON."""
    return {
        "displayName": name,
        "description": description,
        "ingestedUserListInfo": {
            "uploadKeyTypes": ["CONTACT_ID"],
            "contactIdInfo": {"dataSourceType": "DATA_SOURCE_TYPE_FIRST_PARTY"},
        },
    }


def create_user_list(
    client: httpx.Client,
    settings: Settings,
    refresh_token: str,
    customer_id: str,
    name: str,
    description: str,
) -> dict[str, Any]:
    headers = _bearer(client, settings, refresh_token)
    try:
        response = client.post(
            _lists_url(settings, customer_id),
            json=user_list_body(name, description),
            headers=headers,
        )
    except httpx.HTTPError:
        raise PlatformUnavailable() from None
    body = _answer(response)
    list_id = body.get("id")
    if not isinstance(list_id, str) or not list_id.isdigit():
        raise PlatformUnavailable()
    return {"id": list_id, "name": body.get("displayName") or name}
