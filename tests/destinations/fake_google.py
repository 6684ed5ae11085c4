"""A local stand-in for Google's OAuth token endpoint and Data Manager API.

- `POST /token`, form `grant_type=refresh_token&client_id&client_secret&refresh_token`:
  `{"access_token", "expires_in", "token_type": "Bearer"}`; a refresh token it does not
  know is 400 `{"error": "invalid_grant", "error_description"}`, an unknown client 401
  `invalid_client`.
- `POST /v1/audienceMembers:ingest`, `/v1/audienceMembers:remove`, `/v1/events:ingest`
  with `Authorization: Bearer` (a token it issued) and JSON bodies as CONTRACT §11 and
  Google's reference shape them (`destinations`, `audienceMembers` or `events`,
  `encoding: "HEX"`, optional `consent`): `{"requestId"}`. A malformed body is 400
  INVALID_ARGUMENT; rows it refuses are named in google.rpc.BadRequest fieldViolations
  (`audienceMembers[3].userData...`), as Google does.
"""

from __future__ import annotations

import json
import re
import secrets
import uuid
from collections import defaultdict
from typing import Any
from urllib.parse import parse_qs

from tests.destinations.fake_google_login import GoogleLogin
from tests.destinations.fake_server import Answer, FakeServer, Request

CLIENT_ID = "1234567890-abc.apps.googleusercontent.com"
CLIENT_SECRET = "GOCSPX-test-client-secret"
REFRESH_TOKEN = "1//0g-test-refresh-token"
CUSTOMER_ID = "1234567890"
LOGIN_CUSTOMER_ID = "9876543210"
USER_LIST_ID = "555000111"
CONVERSION_ACTION_ID = "777000222"
_HASH = re.compile(r"^[0-9a-f]{64}$")
_CONSENT = {"CONSENT_GRANTED", "CONSENT_DENIED"}
_TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$")


def google_error(
    status: int, state: str, message: str, violations: list[dict[str, str]] | None = None
) -> Answer:
    error: dict[str, Any] = {"code": status, "message": message, "status": state}
    if violations:
        error["details"] = [
            {"@type": "type.googleapis.com/google.rpc.BadRequest", "fieldViolations": violations}
        ]
    return Answer(status, {"error": error})


class FakeGoogle(GoogleLogin, FakeServer):
    def __init__(self, expires_in: int = 3599) -> None:
        self.expires_in = expires_in
        self.refresh_tokens = {REFRESH_TOKEN}
        self.access_tokens: set[str] = set()
        self.token_requests = 0
        self.user_lists: dict[str, set[str]] = defaultdict(set)  # members as canonical JSON
        self.events: dict[str, list[dict[str, Any]]] = defaultdict(list)
        self.bodies: list[dict[str, Any]] = []
        self.refused_hashes: set[str] = set()
        self.init_login(CLIENT_ID, CLIENT_SECRET)  # fake_google_login: sign-in, user lists
        super().__init__()

    @property
    def token_url(self) -> str:
        return f"{self.url}/token"

    @property
    def datamanager_url(self) -> str:
        return self.url

    # -- scripting ---------------------------------------------------------------------

    def revoke_refresh_token(self) -> None:
        with self.lock:
            self.refresh_tokens.clear()
            self.access_tokens.clear()

    def revoke_access_tokens(self) -> None:
        with self.lock:
            self.access_tokens.clear()

    def refuse_identifier(self, *hashes: str) -> None:
        """Rows carrying one of these hashes are refused by name (400, fieldViolations)."""
        with self.lock:
            self.refused_hashes.update(hashes)

    def rate_limit_next(self, retry_after: str | None = "2") -> None:
        error = google_error(429, "RESOURCE_EXHAUSTED", "Quota exceeded for quota metric")
        self.answer_next(429, error.body, {"Retry-After": retry_after} if retry_after else {})

    def server_error_next(self, status: int = 503, times: int = 1) -> None:
        error = google_error(status, "UNAVAILABLE", "The service is currently unavailable.")
        self.answer_next(status, error.body, times=times)

    def members(self, user_list_id: str = USER_LIST_ID) -> list[dict[str, Any]]:
        with self.lock:
            return [json.loads(member) for member in sorted(self.user_lists[user_list_id])]

    # -- the API -----------------------------------------------------------------------

    def handle(self, request: Request) -> Answer:
        login = self.handle_login(request)
        if login is not None:
            return login
        if request.method != "POST":
            return google_error(404, "NOT_FOUND", "Method not found.")
        path = request.path.split("?", 1)[0]  # system parameters ($alt) do not change the route
        if path == "/token":
            return self._token(request)
        route = {
            "/v1/audienceMembers:ingest": ("audienceMembers", "add"),
            "/v1/audienceMembers:remove": ("audienceMembers", "remove"),
            "/v1/events:ingest": ("events", "add"),
        }.get(path)
        if route is None:
            return google_error(404, "NOT_FOUND", f"The requested URL {path} was not found.")
        authorization = request.headers.get("authorization", "")
        if not authorization.startswith("Bearer ") or authorization[7:] not in self.access_tokens:
            return google_error(
                401, "UNAUTHENTICATED", "Request had invalid authentication credentials."
            )
        try:
            body = request.json()
        except ValueError:
            return google_error(400, "INVALID_ARGUMENT", "Invalid JSON payload received.")
        if not isinstance(body, dict):
            return google_error(400, "INVALID_ARGUMENT", "Invalid JSON payload received.")
        self.bodies.append(body)
        key, action = route
        problem = _envelope_problem(body, key)
        if problem:
            return google_error(400, "INVALID_ARGUMENT", problem)
        items = body[key]
        if len(items) > (10_000 if key == "audienceMembers" else 2_000):
            return google_error(400, "INVALID_ARGUMENT", f"Too many {key} in one request.")
        violations = []
        for index, item in enumerate(items):
            problem = _item_problem(item, key)
            if problem is None and self.refused_hashes & set(_hashes(item)):
                problem = "The identifier was refused."
            if problem:
                violations.append({"field": f"{key}[{index}].userData", "description": problem})
        if violations:
            return google_error(
                400, "INVALID_ARGUMENT", "Request contains an invalid argument.", violations
            )
        destination = str(body["destinations"][0]["productDestinationId"])
        for item in items:
            if key == "events":
                self.events[destination].append(item)
            elif action == "add":
                self.user_lists[destination].add(json.dumps(item["userData"], sort_keys=True))
            else:
                self.user_lists[destination].discard(json.dumps(item["userData"], sort_keys=True))
        return Answer(200, {"requestId": str(uuid.uuid4())})

    def _token(self, request: Request) -> Answer:
        self.token_requests += 1
        if not request.headers.get("content-type", "").startswith(
            "application/x-www-form-urlencoded"
        ):
            return Answer(400, {"error": "invalid_request", "error_description": "form expected"})
        form = {key: values[0] for key, values in parse_qs(request.body.decode()).items()}
        if form.get("grant_type") != "refresh_token":
            return Answer(
                400, {"error": "unsupported_grant_type", "error_description": "Invalid grant_type"}
            )
        if form.get("client_id") != CLIENT_ID or form.get("client_secret") != CLIENT_SECRET:
            return Answer(401, {"error": "invalid_client", "error_description": "Unauthorized"})
        if form.get("refresh_token") not in self.refresh_tokens:
            return Answer(
                400,
                {
                    "error": "invalid_grant",
                    "error_description": "Token has been expired or revoked.",
                },
            )
        token = "ya29." + secrets.token_urlsafe(24)
        self.access_tokens.add(token)
        return Answer(
            200, {"access_token": token, "expires_in": self.expires_in, "token_type": "Bearer"}
        )


def _envelope_problem(body: dict[str, Any], key: str) -> str | None:
    allowed = {"destinations", key, "encoding", "consent"}
    if not set(body) <= allowed or key not in body or "destinations" not in body:
        return f"Unknown or missing fields: {sorted(set(body) ^ allowed)}"
    if body.get("encoding") != "HEX":
        return "encoding must be HEX for hashed identifiers."
    consent = body.get("consent")
    if consent is not None and (
        not isinstance(consent, dict)
        or not consent
        or not set(consent) <= {"adUserData", "adPersonalization"}
        or not set(consent.values()) <= _CONSENT
    ):
        return "Invalid consent."
    destinations = body["destinations"]
    if not isinstance(destinations, list) or len(destinations) != 1:
        return "Exactly one destination expected."
    destination = destinations[0]
    if not isinstance(destination, dict) or not set(destination) <= {
        "operatingAccount",
        "loginAccount",
        "productDestinationId",
    }:
        return "Invalid destination."
    for name in ("operatingAccount", "loginAccount"):
        account = destination.get(name)
        if account is None and name == "loginAccount":
            continue
        if not (
            isinstance(account, dict)
            and account.get("accountType") == "GOOGLE_ADS"
            and str(account.get("accountId", "")).isdigit()
            and set(account) == {"accountType", "accountId"}
        ):
            return f"Invalid {name}."
    if not str(destination.get("productDestinationId", "")).isdigit():
        return "Invalid productDestinationId."
    items = body[key]
    if not isinstance(items, list) or not items:
        return f"{key} must not be empty."
    return None


def _item_problem(item: Any, key: str) -> str | None:
    if not isinstance(item, dict):
        return "Not an object."
    if key == "audienceMembers":
        if set(item) != {"userData"}:
            return "A member holds userData only."
        return _user_data_problem(item["userData"])
    expected = {
        "transactionId",
        "eventTimestamp",
        "conversionValue",
        "currency",
        "eventSource",
        "userData",
    }
    if set(item) != expected:
        return "Unexpected event fields."
    if item["eventSource"] != "IN_STORE" or not _TIMESTAMP.match(str(item["eventTimestamp"])):
        return "eventSource or eventTimestamp."
    value = item["conversionValue"]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "conversionValue must be a number."
    if not re.fullmatch(r"[A-Z]{3}", str(item["currency"])) or not item["transactionId"]:
        return "currency or transactionId."
    return _user_data_problem(item["userData"])


def _user_data_problem(user_data: Any) -> str | None:
    identifiers = user_data.get("userIdentifiers") if isinstance(user_data, dict) else None
    if not isinstance(identifiers, list) or not 1 <= len(identifiers) <= 10:
        return "userData.userIdentifiers must hold 1 to 10 identifiers."
    for identifier in identifiers:
        if not isinstance(identifier, dict) or len(identifier) != 1:
            return "Each identifier holds one field."
        ((name, value),) = identifier.items()
        if name in ("emailAddress", "phoneNumber"):
            if not _HASH.match(str(value)):
                return f"{name} must be a hex SHA-256."
        elif name == "address":
            if not (
                isinstance(value, dict)
                and set(value) == {"givenName", "familyName", "regionCode", "postalCode"}
                and _HASH.match(str(value["givenName"]))
                and _HASH.match(str(value["familyName"]))
                and re.fullmatch(r"[A-Z]{2}", str(value["regionCode"]))
                and value["postalCode"]
            ):
                return "Invalid address."
        else:
            return f"Unknown identifier {name}."
    return None


def _hashes(item: dict[str, Any]) -> list[str]:
    identifiers = item.get("userData", {}).get("userIdentifiers", [])
    return [
        value
        for identifier in identifiers
        for value in identifier.values()
        if isinstance(value, str)
    ]
