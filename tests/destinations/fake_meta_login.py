"""Meta's login and list endpoints, for the local stand-in (fake_meta.FakeMeta).

- `GET /{version}/dialog/oauth?client_id&redirect_uri&state&response_type=code&scope`:
  the login dialog, which here approves at once (or, after `deny_next()`, is declined):
  302 to `redirect_uri?code=..&state=..` (or `?error=access_denied&error_reason=
  user_denied&error_description=Permissions+error&state=..`).
- `GET /{version}/oauth/access_token?client_id&client_secret&redirect_uri&code`:
  `{"access_token", "token_type": "bearer", "expires_in"}` (a short-lived token); a code
  is taken once, with the redirect URI it was issued for. With
  `grant_type=fb_exchange_token&fb_exchange_token=..`: the long-lived token (the stand-in's
  `access_token`, which its audience and events endpoints take), `expires_in` 60 days.
- `GET /{version}/me?fields=id,name`; `me/adaccounts?fields=id,name,currency`;
  `act_{id}/customaudiences?fields=id,name,subtype`; `act_{id}/adspixels?fields=id,name`:
  `{"data": [...], "paging": {"cursors", "next"?}}`, `PAGE` items a page.
- `POST /{version}/act_{id}/customaudiences` (form `name`, `subtype=CUSTOM`,
  `description`, `customer_file_source`): `{"id"}`.

Errors are Meta's, as in fake_meta.
"""

from __future__ import annotations

import re
import secrets
import time
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from tests.destinations.fake_server import Answer, FakeServer, Request

APP_ID = "881234567890123"
APP_SECRET = "test-meta-app-secret-0123456789"
USER_NAME = "Maria Bakery Ads"
AD_ACCOUNTS = [
    {
        "id": "act_101000000001",
        "account_id": "101000000001",
        "name": "Bakery ads",
        "currency": "EUR",
    },
    {
        "id": "act_101000000002",
        "account_id": "101000000002",
        "name": "Second shop",
        "currency": "EUR",
    },
]
PAGE = 1
LONG_LIVED_SECONDS = 60 * 24 * 3600
_LOGIN_PATH = re.compile(
    r"^/(v\d+\.\d+)/(dialog/oauth|oauth/access_token|me|me/adaccounts|debug_token|act_(\d+)/(customaudiences|adspixels))$"
)


def _error(status: int, code: int, message: str, kind: str = "OAuthException") -> Answer:
    return Answer(
        status,
        {
            "error": {
                "message": message,
                "type": kind,
                "code": code,
                "fbtrace_id": "A" + secrets.token_hex(10),
            }
        },
    )


class MetaLogin(FakeServer):
    """Mixed into FakeMeta: `handle_login` answers the login and list paths, else None."""

    # Set by FakeMeta.__init__ through `init_login`.
    access_token: str
    audiences: Any
    datasets: Any

    def init_login(self) -> None:
        self.codes: dict[str, str] = {}  # code -> redirect_uri
        self.short_tokens: set[str] = set()
        self.deny = False
        self.says_expires_in = True  # False: the exchange leaves it to /debug_token
        self.audience_info: dict[str, dict[str, Any]] = {}
        self.audience_accounts: dict[str, str] = {}
        self.created_audiences: list[dict[str, str]] = []
        self.pixels: dict[str, list[dict[str, str]]] = {}

    def deny_next(self) -> None:
        self.deny = True

    def add_audience(
        self, account: str, audience_id: str, name: str, subtype: str = "CUSTOM"
    ) -> None:
        self.audiences.setdefault(audience_id, set())
        self.audience_info[audience_id] = {"id": audience_id, "name": name, "subtype": subtype}
        self.audience_accounts[audience_id] = account

    def add_dataset(self, account: str, dataset_id: str, name: str) -> None:
        self.datasets.setdefault(dataset_id, [])
        self.pixels.setdefault(account, []).append({"id": dataset_id, "name": name})

    def handle_login(self, request: Request) -> Answer | None:
        path, _, query_text = request.path.partition("?")
        match = _LOGIN_PATH.match(path)
        if not match:
            return None
        query = {k: v[0] for k, v in parse_qs(query_text).items()}
        what, account, edge = match.group(2), match.group(3), match.group(4)
        if what == "dialog/oauth":
            return self._dialog(query)
        if what == "oauth/access_token":
            return self._exchange(query)
        if what == "debug_token":
            return self._debug_token(request, query)
        if request.headers.get("authorization") != f"Bearer {self.access_token}":
            return _error(401, 190, "Invalid OAuth access token - Cannot parse access token")
        if what == "me":
            return Answer(200, {"id": "10228000000000001", "name": USER_NAME})
        if what == "me/adaccounts":
            return self._page(AD_ACCOUNTS, query, path)
        known = {a["account_id"] for a in AD_ACCOUNTS}
        if account not in known:
            return _error(
                400,
                100,
                f"Unsupported get request. Object with ID 'act_{account}' does not exist",
                "GraphMethodException",
            )
        if edge == "adspixels":
            return self._page(self.pixels.get(account, []), query, path)
        if request.method == "POST":
            return self._create_audience(account, request)
        mine = [
            info
            for aid, info in self.audience_info.items()
            if self.audience_accounts.get(aid) == account
        ]
        return self._page(mine, query, path)

    def _dialog(self, query: dict[str, str]) -> Answer:
        if query.get("client_id") != APP_ID or query.get("response_type") != "code":
            return _error(400, 191, "Invalid App ID or response type")
        if set(query.get("scope", "").split(",")) != {"ads_management", "business_management"}:
            return _error(400, 100, "Invalid scopes")
        redirect = query.get("redirect_uri", "")
        if not urlsplit(redirect).scheme:
            return _error(400, 191, "redirect_uri is not absolute")
        if self.deny:
            self.deny = False
            answer = {
                "error": "access_denied",
                "error_code": "200",
                "error_description": "Permissions error",
                "error_reason": "user_denied",
                "state": query.get("state", ""),
            }
        else:
            code = "AQ" + secrets.token_urlsafe(32)
            self.codes[code] = redirect
            answer = {"code": code, "state": query.get("state", "")}
        return Answer(302, {}, {"Location": f"{redirect}?{urlencode(answer)}"})

    def _exchange(self, query: dict[str, str]) -> Answer:
        if query.get("client_id") != APP_ID or query.get("client_secret") != APP_SECRET:
            return _error(400, 1, "Error validating client secret.")
        if query.get("grant_type") == "fb_exchange_token":
            if query.get("fb_exchange_token") not in self.short_tokens:
                return _error(400, 190, "Invalid OAuth access token.")
            answer: dict[str, Any] = {"access_token": self.access_token, "token_type": "bearer"}
            if self.says_expires_in:
                answer["expires_in"] = LONG_LIVED_SECONDS
            return Answer(200, answer)
        code = query.get("code", "")
        if self.codes.pop(code, None) != query.get("redirect_uri") or not code:
            return _error(400, 100, "This authorization code has been used.", "OAuthException")
        token = "EAAshort" + secrets.token_urlsafe(16)
        self.short_tokens.add(token)
        return Answer(200, {"access_token": token, "token_type": "bearer", "expires_in": 5400})

    def _page(self, items: list[dict[str, Any]], query: dict[str, str], path: str) -> Answer:
        start = int(query.get("after") or 0)
        fields = query.get("fields", "").split(",")
        data = [
            {k: v for k, v in item.items() if k in fields} for item in items[start : start + PAGE]
        ]
        paging: dict[str, Any] = {"cursors": {"before": str(start), "after": str(start + PAGE)}}
        if start + PAGE < len(items):
            following = {
                "fields": query.get("fields", ""),
                "limit": str(PAGE),
                "after": str(start + PAGE),
            }
            paging["next"] = f"{self.url}{path}?{urlencode(following)}"
        return Answer(200, {"data": data, "paging": paging})

    def _create_audience(self, account: str, request: Request) -> Answer:
        if not request.headers.get("content-type", "").startswith(
            "application/x-www-form-urlencoded"
        ):
            return _error(400, 100, "(#100) expected form parameters")
        form = {k: v[0] for k, v in parse_qs(request.body.decode()).items()}
        if form.get("subtype") != "CUSTOM" or form.get("customer_file_source") not in (
            "USER_PROVIDED_ONLY",
            "PARTNER_PROVIDED_ONLY",
            "BOTH_USER_AND_PARTNER_PROVIDED",
        ):
            return _error(400, 100, "(#100) Invalid parameter: subtype or customer_file_source")
        if not form.get("name") or set(form) - {
            "name",
            "subtype",
            "description",
            "customer_file_source",
        }:
            return _error(400, 100, "(#100) Invalid parameter")
        audience_id = "2385" + "".join(secrets.choice("0123456789") for _ in range(13))
        self.add_audience(account, audience_id, form["name"])
        self.created_audiences.append(form)
        return Answer(200, {"id": audience_id})

    def _debug_token(self, request: Request, query: dict[str, str]) -> Answer:
        """`GET /debug_token?input_token=` with the app's token (`{app id}|{secret}`)."""
        if request.headers.get("authorization") != f"Bearer {APP_ID}|{APP_SECRET}":
            return _error(400, 190, "Invalid OAuth access token signature.")
        valid = query.get("input_token") == self.access_token
        data: dict[str, Any] = {"app_id": APP_ID, "type": "USER", "is_valid": valid}
        if valid:
            data["expires_at"] = int(time.time()) + LONG_LIVED_SECONDS - 3600
            data["scopes"] = ["ads_management", "business_management"]
        return Answer(200, {"data": data})
