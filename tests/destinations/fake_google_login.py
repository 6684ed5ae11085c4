"""Google's sign-in and the Data Manager API's user lists, for the local stand-in
(fake_google.FakeGoogle).

- `GET /auth?client_id&redirect_uri&response_type=code&scope&access_type=offline
  &prompt=consent&state&code_challenge&code_challenge_method=S256`: the consent screen,
  which here approves at once (after `deny_next()`, declines): 302 to
  `redirect_uri?state&code&scope` (or `?error=access_denied&state`).
- `POST /token`, form `grant_type=authorization_code&code&redirect_uri&client_id
  &client_secret&code_verifier`: `{"access_token", "expires_in", "refresh_token",
  "scope", "token_type"}`; the code is taken once, with its redirect URI, and only with
  the verifier whose S256 challenge it was issued for (else 400 `invalid_grant`).
- `GET /v1/accountTypes/GOOGLE_ADS/accounts/{id}/userLists[?pageToken]`:
  `{"userLists": [UserList], "nextPageToken"?}`, `PAGE` a page; `POST` on the same path
  with a UserList: the list made, with its `name` and `id`. The body must parse as the
  official `google-ads-datamanager` type (`datamanager_v1.UserList`; what it refuses is
  400 INVALID_ARGUMENT, as Google's JSON parser answers), `displayName` required.
"""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from google.ads import datamanager_v1
from google.protobuf.json_format import ParseError

from tests.destinations.fake_server import Answer, FakeServer, Request

SCOPE = "https://www.googleapis.com/auth/datamanager"
PAGE = 1
_LISTS = re.compile(r"^/v1/accountTypes/GOOGLE_ADS/accounts/(\d{10})/userLists$")
USER_LIST_FIELDS = {
    "name",
    "id",
    "displayName",
    "description",
    "membershipStatus",
    "integrationCode",
    "membershipDuration",
    "readOnly",
    "sizeInfo",
    "targetNetworkInfo",
    "closingReason",
    "accessReason",
    "accountAccessStatus",
    "ingestedUserListInfo",
}
INGESTED_FIELDS = {
    "uploadKeyTypes",
    "contactIdInfo",
    "mobileIdInfo",
    "userIdInfo",
    "pairIdInfo",
    "pseudonymousIdInfo",
    "partnerAudienceInfo",
}
UPLOAD_KEY_TYPES = {"CONTACT_ID", "MOBILE_ID", "USER_ID", "PAIR_ID", "PSEUDONYMOUS_ID"}


def _error(status: int, state: str, message: str) -> Answer:
    return Answer(status, {"error": {"code": status, "message": message, "status": state}})


def _oauth_error(error: str, description: str, status: int = 400) -> Answer:
    return Answer(status, {"error": error, "error_description": description})


class GoogleLogin(FakeServer):
    """Mixed into FakeGoogle: `handle_login` answers the sign-in and user-list paths."""

    # FakeGoogle's own, set in its __init__.
    refresh_tokens: set[str]
    access_tokens: set[str]

    def init_login(self, client_id: str, client_secret: str) -> None:
        self.client = (client_id, client_secret)
        self.codes: dict[str, tuple[str, str]] = {}  # code -> (challenge, redirect_uri)
        self.deny = False
        # account -> its lists, as Google answers them
        self.lists_of: dict[str, list[dict[str, Any]]] = {}
        self.created_lists: list[dict[str, Any]] = []

    def deny_next(self) -> None:
        self.deny = True

    def add_user_list(self, account: str, list_id: str, name: str, contact: bool = True) -> None:
        info = {"uploadKeyTypes": ["CONTACT_ID" if contact else "MOBILE_ID"]}
        self.lists_of.setdefault(account, []).append(
            {
                "name": f"accountTypes/GOOGLE_ADS/accounts/{account}/userLists/{list_id}",
                "id": list_id,
                "displayName": name,
                "membershipStatus": "OPEN",
                "ingestedUserListInfo": info,
            }
        )

    def handle_login(self, request: Request) -> Answer | None:
        path, _, query_text = request.path.partition("?")
        query = {k: v[0] for k, v in parse_qs(query_text).items()}
        if path == "/auth" and request.method == "GET":
            return self._consent(query)
        if path == "/token" and b"grant_type=authorization_code" in request.body:
            return self._code(request)
        match = _LISTS.match(path)
        if not match:
            return None
        authorization = request.headers.get("authorization", "")
        if not authorization.startswith("Bearer ") or authorization[7:] not in self.access_tokens:
            return _error(401, "UNAUTHENTICATED", "Request had invalid authentication credentials.")
        account = match.group(1)
        if request.method == "POST":
            return self._create(account, request)
        return self._page(account, query)

    def _consent(self, query: dict[str, str]) -> Answer:
        expected = {
            "client_id": self.client[0],
            "response_type": "code",
            "scope": SCOPE,
            "access_type": "offline",
            "prompt": "consent",
            "code_challenge_method": "S256",
        }
        for name, value in expected.items():
            if query.get(name) != value:
                return _oauth_error("invalid_request", f"Bad {name}")
        redirect = query.get("redirect_uri", "")
        if not urlsplit(redirect).scheme or not query.get("code_challenge"):
            return _oauth_error("invalid_request", "Missing redirect_uri or code_challenge")
        if self.deny:
            self.deny = False
            answer = {"error": "access_denied", "state": query.get("state", "")}
        else:
            code = "4/0A" + secrets.token_urlsafe(32)
            self.codes[code] = (query["code_challenge"], redirect)
            answer = {"state": query.get("state", ""), "code": code, "scope": SCOPE}
        return Answer(302, {}, {"Location": f"{redirect}?{urlencode(answer)}"})

    def _code(self, request: Request) -> Answer:
        form = {k: v[0] for k, v in parse_qs(request.body.decode()).items()}
        if (form.get("client_id"), form.get("client_secret")) != self.client:
            return _oauth_error("invalid_client", "Unauthorized", 401)
        issued = self.codes.pop(form.get("code", ""), None)
        verifier = form.get("code_verifier", "")
        challenge = (
            base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
            .decode()
            .rstrip("=")
        )
        if issued is None or issued != (challenge, form.get("redirect_uri")):
            return _oauth_error("invalid_grant", "Bad Request")
        refresh = "1//0g" + secrets.token_urlsafe(24)
        access = "ya29." + secrets.token_urlsafe(24)
        self.refresh_tokens.add(refresh)
        self.access_tokens.add(access)
        return Answer(
            200,
            {
                "access_token": access,
                "expires_in": 3599,
                "refresh_token": refresh,
                "scope": SCOPE,
                "token_type": "Bearer",
            },
        )

    def _page(self, account: str, query: dict[str, str]) -> Answer:
        start = int(query.get("pageToken") or 0)
        lists = self.lists_of.get(account, [])
        answer: dict[str, Any] = {"userLists": lists[start : start + PAGE]}
        if start + PAGE < len(lists):
            answer["nextPageToken"] = str(start + PAGE)
        return Answer(200, answer)

    def _create(self, account: str, request: Request) -> Answer:
        try:
            body = request.json()
            # The official type refuses what Google's JSON parser refuses (an unknown field,
            # a wrong enum value or type).
            datamanager_v1.UserList.from_json(request.body.decode())
        except (ValueError, ParseError) as error:
            return _error(400, "INVALID_ARGUMENT", f"Invalid JSON payload received. {error}")
        problem = _user_list_problem(body)
        if problem:
            return _error(400, "INVALID_ARGUMENT", problem)
        list_id = str(secrets.randbelow(10**9) + 10**9)
        made = {
            **body,
            "name": f"accountTypes/GOOGLE_ADS/accounts/{account}/userLists/{list_id}",
            "id": list_id,
            "membershipStatus": "OPEN",
        }
        self.lists_of.setdefault(account, []).append(made)
        self.created_lists.append(body)
        return Answer(200, made)


def _user_list_problem(body: Any) -> str | None:
    if not isinstance(body, dict):
        return "Invalid JSON payload received."
    unknown = set(body) - USER_LIST_FIELDS
    if unknown:
        return f'Invalid JSON payload received. Unknown name "{sorted(unknown)[0]}"'
    if not isinstance(body.get("displayName"), str) or not body["displayName"]:
        return "display_name is required"
    info = body.get("ingestedUserListInfo")
    if info is not None:
        if not isinstance(info, dict) or set(info) - INGESTED_FIELDS:
            return "Invalid ingested_user_list_info"
        types = info.get("uploadKeyTypes")
        if not isinstance(types, list) or not types or set(types) - UPLOAD_KEY_TYPES:
            return "ingested_user_list_info.upload_key_types is required"
    return None
