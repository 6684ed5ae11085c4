"""A local stand-in for Google's OAuth token endpoint and Data Manager API.

- `POST /token`, form `grant_type=refresh_token&client_id&client_secret&refresh_token`:
  `{"access_token", "expires_in", "token_type": "Bearer"}`; a refresh token it does not
  know is 400 `{"error": "invalid_grant", "error_description"}`, an unknown client 401
  `invalid_client`.
- `POST /v1/audienceMembers:ingest`, `/v1/audienceMembers:remove`, `/v1/events:ingest`
  with `Authorization: Bearer` (a token it issued) and JSON bodies as CONTRACT §11 and
  Google's reference shape them (`destinations`, `audienceMembers` or `events`,
  `encoding: "HEX"`, optional `consent` on the ingest calls only): `{"requestId"}`.
  Strict as Google's front end: every body must parse as the official type
  (`google-ads-datamanager`: IngestAudienceMembersRequest, RemoveAudienceMembersRequest,
  IngestEventsRequest) with unknown fields refused, so an unknown field (a `consent` on
  a removal) or a wrong enum name is 400 INVALID_ARGUMENT with the parser's message.
  What the types cannot say (one destination, digits, hex hashes, limits) is checked
  here; rows it refuses are named in google.rpc.BadRequest fieldViolations
  (`audienceMembers[3].userData...`), as Google does.
- `GET /v1/requestStatus:retrieve?requestId=...` (RetrieveRequestStatusRequest from the
  query; an unknown parameter is 400): Google's verdict on a request it took, built with
  the official RetrieveRequestStatusResponse from what that request carried (its members
  or events), as `script_verdicts` sets it: PROCESSING a number of times, then SUCCESS
  (record count, match-rate range), PARTIAL_SUCCESS or FAILED (error counts). A request
  id it never gave is 404.
"""

from __future__ import annotations

import json
import re
import secrets
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

from google.ads import datamanager_v1
from google.protobuf import json_format

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
# The official request type of each call: the body must parse as it.
REQUEST_TYPES: dict[str, Any] = {
    "/v1/audienceMembers:ingest": datamanager_v1.IngestAudienceMembersRequest,
    "/v1/audienceMembers:remove": datamanager_v1.RemoveAudienceMembersRequest,
    "/v1/events:ingest": datamanager_v1.IngestEventsRequest,
}
RETRIEVE = "/v1/requestStatus:retrieve"
# System parameters any Google REST call may carry; they bind to no field.
_SYSTEM_PARAMETERS = {"alt", "fields", "prettyPrint", "key", "callback"}


@dataclass
class Verdict:
    """What `requestStatus:retrieve` answers for a request: PROCESSING `processing` times,
    then `status` (SUCCESS, PARTIAL_SUCCESS or FAILED) with `match_rate` (audience ingests
    only) and `errors` / `warnings` ({ProcessingErrorReason name: records})."""

    processing: int = 0
    status: str = "SUCCESS"
    match_rate: str = "MATCH_RATE_RANGE_20_TO_30"
    errors: dict[str, int] = field(default_factory=dict)
    warnings: dict[str, int] = field(default_factory=dict)


@dataclass
class Taken:
    """A request the stand-in took: its path, destination and rows."""

    path: str
    destination: dict[str, Any]
    records: int
    identifiers: int
    retrieves: int = 0


def parse_as_official_type(path: str, text: str) -> str | None:
    """None when `text` parses as the call's official request type (unknown fields
    refused), else the parser's message (e.g. `has no field named "consent"`)."""
    message = REQUEST_TYPES[path].pb()()
    try:
        json_format.Parse(text, message, ignore_unknown_fields=False)
    except (json_format.ParseError, ValueError) as error:
        return str(error)
    return None


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
        self.taken: dict[str, Taken] = {}  # request id -> what that request carried
        self.verdict = Verdict()  # every request's, unless one of its own is scripted
        self.verdict_of: dict[str, Verdict] = {}
        self.refusals: list[str] = []  # the parser's messages of the bodies refused
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

    def script_verdicts(
        self,
        *,
        processing: int = 0,
        status: str = "SUCCESS",
        match_rate: str = "MATCH_RATE_RANGE_20_TO_30",
        errors: dict[str, int] | None = None,
        warnings: dict[str, int] | None = None,
        request_id: str | None = None,
    ) -> None:
        """How `requestStatus:retrieve` answers: for `request_id` only, or every request."""
        verdict = Verdict(processing, status, match_rate, errors or {}, warnings or {})
        with self.lock:
            if request_id is None:
                self.verdict = verdict
            else:
                self.verdict_of[request_id] = verdict

    def request_ids(self, path: str = "/v1/audienceMembers:ingest") -> list[str]:
        """The ids it answered the requests to `path` with, in order."""
        with self.lock:
            return [request_id for request_id, taken in self.taken.items() if taken.path == path]

    def members(self, user_list_id: str = USER_LIST_ID) -> list[dict[str, Any]]:
        with self.lock:
            return [json.loads(member) for member in sorted(self.user_lists[user_list_id])]

    # -- the API -----------------------------------------------------------------------

    def handle(self, request: Request) -> Answer:
        login = self.handle_login(request)
        if login is not None:
            return login
        path, _, query = request.path.partition("?")  # system parameters do not change the route
        if path == "/token" and request.method == "POST":
            return self._token(request)
        if request.method == "GET" and path == RETRIEVE:
            return self._authorized(request) or self._retrieve(query)
        if request.method != "POST" or path not in REQUEST_TYPES:
            return google_error(404, "NOT_FOUND", f"The requested URL {path} was not found.")
        refused = self._authorized(request)
        if refused:
            return refused
        try:
            body = request.json()
        except ValueError:
            return google_error(400, "INVALID_ARGUMENT", "Invalid JSON payload received.")
        if not isinstance(body, dict):
            return google_error(400, "INVALID_ARGUMENT", "Invalid JSON payload received.")
        self.bodies.append(body)
        # Google's front end parses the body as the call's type first: an unknown field or
        # a wrong enum name refuses the whole request.
        problem = parse_as_official_type(path, request.body.decode())
        if problem:
            self.refusals.append(problem)
            return google_error(
                400, "INVALID_ARGUMENT", f"Invalid JSON payload received. {problem}"
            )
        key = "events" if path == "/v1/events:ingest" else "audienceMembers"
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
            elif path == "/v1/audienceMembers:ingest":
                self.user_lists[destination].add(json.dumps(item["userData"], sort_keys=True))
            else:
                self.user_lists[destination].discard(json.dumps(item["userData"], sort_keys=True))
        request_id = str(uuid.uuid4())
        self.taken[request_id] = Taken(
            path,
            body["destinations"][0],
            len(items),
            sum(len(item["userData"]["userIdentifiers"]) for item in items),
        )
        return Answer(200, {"requestId": request_id})

    def _authorized(self, request: Request) -> Answer | None:
        authorization = request.headers.get("authorization", "")
        if not authorization.startswith("Bearer ") or authorization[7:] not in self.access_tokens:
            return google_error(
                401, "UNAUTHENTICATED", "Request had invalid authentication credentials."
            )
        return None

    def _retrieve(self, query: str) -> Answer:
        """RetrieveRequestStatus: the request from the query parameters, parsed as the
        official type; the answer built as the official RetrieveRequestStatusResponse."""
        parameters = {
            name: values[-1]
            for name, values in parse_qs(query, keep_blank_values=True).items()
            if not name.startswith("$") and name not in _SYSTEM_PARAMETERS
        }
        asked = datamanager_v1.RetrieveRequestStatusRequest.pb()()
        try:
            json_format.ParseDict(parameters, asked, ignore_unknown_fields=False)
        except json_format.ParseError as error:
            self.refusals.append(str(error))
            return google_error(400, "INVALID_ARGUMENT", f"Invalid JSON payload received. {error}")
        if not asked.request_id:
            return google_error(400, "INVALID_ARGUMENT", "request_id is required")
        taken = self.taken.get(asked.request_id)
        if taken is None:
            return google_error(404, "NOT_FOUND", "Requested entity was not found.")
        taken.retrieves += 1
        verdict = self.verdict_of.get(asked.request_id, self.verdict)
        status = _status_per_destination(taken, verdict)
        answer = datamanager_v1.RetrieveRequestStatusResponse(
            request_status_per_destination=[status]
        )
        text = datamanager_v1.RetrieveRequestStatusResponse.to_json(
            answer, use_integers_for_enums=False
        )
        return Answer(200, json.loads(text))

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


def _status_per_destination(
    taken: Taken, verdict: Verdict
) -> datamanager_v1.RequestStatusPerDestination:
    """The verdict on one request, from what it carried."""
    dm: Any = datamanager_v1  # proto-plus enums index by name at run time
    per = dm.RequestStatusPerDestination
    destination = datamanager_v1.Destination.pb()()
    json_format.ParseDict(taken.destination, destination)
    status = per(destination=dm.Destination.wrap(destination))
    if taken.retrieves <= verdict.processing:
        status.request_status = per.RequestStatus.PROCESSING
        return status
    status.request_status = per.RequestStatus[verdict.status]
    if taken.path == "/v1/events:ingest":
        status.events_ingestion_status = per.IngestEventsStatus(record_count=taken.records)
    elif taken.path == "/v1/audienceMembers:ingest":
        status.audience_members_ingestion_status = per.IngestAudienceMembersStatus(
            user_data_ingestion_status=per.IngestUserDataStatus(
                record_count=taken.records,
                user_identifier_count=taken.identifiers,
                upload_match_rate_range=dm.MatchRateRange[verdict.match_rate],
            )
        )
    else:
        status.audience_members_removal_status = per.RemoveAudienceMembersStatus(
            user_data_removal_status=per.RemoveUserDataStatus(
                record_count=taken.records, user_identifier_count=taken.identifiers
            )
        )
    if verdict.errors:
        errors = _counts(dm.ErrorCount, dm.ProcessingErrorReason, verdict.errors)
        status.error_info = dm.ErrorInfo(error_counts=errors)
    if verdict.warnings:
        warnings = _counts(dm.WarningCount, dm.ProcessingWarningReason, verdict.warnings)
        status.warning_info = dm.WarningInfo(warning_counts=warnings)
    return status


def _counts(count_type: Any, reasons: Any, counts: dict[str, int]) -> list[Any]:
    return [count_type(reason=reasons[name], record_count=n) for name, n in counts.items()]


# What the official types cannot say (they decide field names, types and enum names):
# the values CONTRACT §11 and Google's limits ask for.


def _envelope_problem(body: dict[str, Any], key: str) -> str | None:
    if body.get("encoding") != "HEX":
        return "encoding must be HEX for hashed identifiers."
    if "consent" in body and not body["consent"]:
        return "Invalid consent."
    destinations = body.get("destinations")
    if not isinstance(destinations, list) or len(destinations) != 1:
        return "Exactly one destination expected."
    destination = destinations[0]
    for name in ("operatingAccount", "loginAccount"):
        account = destination.get(name)
        if account is None and name == "loginAccount":
            continue
        if not (
            isinstance(account, dict)
            and account.get("accountType") == "GOOGLE_ADS"
            and str(account.get("accountId", "")).isdigit()
        ):
            return f"Invalid {name}."
    if not str(destination.get("productDestinationId", "")).isdigit():
        return "Invalid productDestinationId."
    items = body.get(key)
    if not isinstance(items, list) or not items:
        return f"{key} must not be empty."
    return None


_EVENT_FIELDS = ("transactionId", "eventTimestamp", "conversionValue", "currency", "userData")


def _item_problem(item: dict[str, Any], key: str) -> str | None:
    if key == "audienceMembers":
        if "userData" not in item:
            return "A member holds userData."
        return _user_data_problem(item["userData"])
    if any(name not in item for name in _EVENT_FIELDS):
        return "An event needs transactionId, eventTimestamp, conversionValue, currency, userData."
    if item.get("eventSource") != "IN_STORE":
        return "eventSource must be IN_STORE."
    if not re.fullmatch(r"[A-Z]{3}", item["currency"]) or not item["transactionId"]:
        return "currency or transactionId."
    return _user_data_problem(item["userData"])


def _user_data_problem(user_data: dict[str, Any]) -> str | None:
    identifiers = user_data.get("userIdentifiers") or []
    if not 1 <= len(identifiers) <= 10:
        return "userData.userIdentifiers must hold 1 to 10 identifiers."
    for identifier in identifiers:
        if len(identifier) != 1:
            return "Each identifier holds one field."
        ((name, value),) = identifier.items()
        if name in ("emailAddress", "phoneNumber"):
            if not _HASH.match(value):
                return f"{name} must be a hex SHA-256."
        elif name == "address":
            if not (
                set(value) == {"givenName", "familyName", "regionCode", "postalCode"}
                and _HASH.match(value["givenName"])
                and _HASH.match(value["familyName"])
                and re.fullmatch(r"[A-Z]{2}", value["regionCode"])
                and value["postalCode"]
            ):
                return "Invalid address."
        else:
            return f"Identifier {name} is not one PartnerLink sends."
    return None


def _hashes(item: dict[str, Any]) -> list[str]:
    identifiers = item.get("userData", {}).get("userIdentifiers", [])
    return [
        value
        for identifier in identifiers
        for value in identifier.values()
        if isinstance(value, str)
    ]
