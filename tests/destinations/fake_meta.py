"""A local stand-in for Meta's Marketing API, speaking its documented HTTP.

- `POST|DELETE /{version}/{audienceId}/users` with `Authorization: Bearer` and JSON
  `{"payload": {"schema": [...], "data": [[...]]}, "session": {...}}`, at most 10,000
  rows: adds or removes the rows, answers `{"audience_id", "session_id", "num_received",
  "num_invalid_entries", "invalid_entry_samples"}`. A row is invalid when every cell is
  empty or a cell is not a lower-case hex SHA-256.
- `POST /{version}/{datasetId}/events` with JSON `{"data": [Event]}`, at most 1,000
  events, answers `{"events_received", "messages", "fbtrace_id"}`; a malformed event
  (or one a test refused with `refuse_events`) refuses the whole request, as Meta does:
  400 with error code 100.
- `GET /{version}/{audienceId}?fields=approximate_count_lower_bound,...` answers the
  audience's size as Meta estimates it: rounded, from the rows it holds (`estimate`).
- Errors are Meta's `{"error": {"message", "type", "code", "error_subcode",
  "fbtrace_id"}}`: an unknown token is 190 (HTTP 401), an unknown id 100/33 (HTTP 400),
  a throttled business 80003 (HTTP 400) with `X-Business-Use-Case-Usage`.
"""

from __future__ import annotations

import json
import re
import secrets
from collections import defaultdict
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.destinations.fake_meta_login import MetaLogin
from tests.destinations.fake_server import Answer, FakeServer, Request

ACCESS_TOKEN = "EAAGm0PX4ZCpsBAtest-meta-system-user-token"
VERSION = "v24.0"
AUDIENCE_ID = "23851234567890123"
DATASET_ID = "1234567890123456"
BUSINESS_ID = "102938475610293"
SCHEMA = ["EMAIL", "PHONE", "FN", "LN", "CT", "COUNTRY"]
SESSION_KEYS = {"session_id", "batch_seq", "last_batch_flag", "estimated_num_total"}
EVENT_KEYS = {"event_name", "event_time", "action_source", "event_id", "user_data", "custom_data"}
USER_DATA_KEYS = {"em", "ph", "fn", "ln", "ct", "country"}
_HASH = re.compile(r"^[0-9a-f]{64}$")
_PATH = re.compile(r"^/(v\d+\.\d+)/(\d+)/(users|events)$")
_NODE = re.compile(r"^/(v\d+\.\d+)/(\d+)$")
SIZE_FIELDS = {"approximate_count_lower_bound", "approximate_count_upper_bound"}


def estimate(people: int) -> tuple[int, int]:
    """Meta's estimate of an audience's size as this stand-in gives it: a range, rounded
    (Meta's own example: 5,000 people as 4,900-5,100), -1 for both below 1,000 (too
    few to estimate)."""
    if people < 1_000:
        return -1, -1
    step = 10 ** (len(str(people)) - 2)  # two significant figures
    lower = people // step * step
    return lower, lower + step


def meta_error(
    status: int, code: int, message: str, subcode: int | None = None, kind: str = "OAuthException"
) -> tuple[int, dict[str, Any]]:
    error: dict[str, Any] = {"message": message, "type": kind, "code": code}
    if subcode is not None:
        error["error_subcode"] = subcode
    error["fbtrace_id"] = "A" + secrets.token_hex(10)
    return status, {"error": error}


class FakeMeta(MetaLogin, FakeServer):
    def __init__(self) -> None:
        self.access_token = ACCESS_TOKEN
        self.audiences: dict[str, set[tuple[str, ...]]] = defaultdict(set)
        self.audiences[AUDIENCE_ID] = set()
        self.datasets: dict[str, list[dict[str, Any]]] = defaultdict(list)
        self.datasets[DATASET_ID] = []
        self.refused_event_ids: set[str] = set()
        # A size a test makes Meta answer for an audience, instead of estimate()'s.
        self.sizes: dict[str, tuple[int, int]] = {}
        # Audience requests taken before the token expires (None: it never does).
        self.token_lasts_for: int | None = None
        self.init_login()  # fake_meta_login: the login dialog, the exchange, the lists
        super().__init__()

    @property
    def graph_url(self) -> str:
        return self.url

    # -- scripting ---------------------------------------------------------------------

    def rate_limit_next(
        self, retry_after: str | None = "3", code: int = 17, status: int = 400
    ) -> None:
        """Meta answers its rate limits (codes 4, 17, 32, 613, 80000-range) as HTTP 400
        with the code in the body; a proxy in front may say 429."""
        headers = {"Retry-After": retry_after} if retry_after else {}
        _, body = meta_error(status, code, "User request limit reached")
        self.answer_next(status, body, headers)

    def throttle_next(
        self,
        minutes: int,
        *,
        code: int = 80_003,
        status: int = 400,
        retry_after: str | None = None,
        usage: str | None = None,
    ) -> None:
        """Meta's business use case throttling: error 80003 (custom audiences; 80004 ads
        management, 80000 insights, ...) with `X-Business-Use-Case-Usage` naming the
        minutes until access comes back; `usage` replaces the header's JSON."""
        cases = [
            {"type": "custom_audience", "call_count": 100, "total_cputime": 12,
             "total_time": 14, "estimated_time_to_regain_access": minutes},
            {"type": "ads_management", "call_count": 28, "total_cputime": 25,
             "total_time": 25, "estimated_time_to_regain_access": 0},
        ]  # fmt: skip
        headers = {"X-Business-Use-Case-Usage": usage or json.dumps({BUSINESS_ID: cases})}
        if retry_after:
            headers["Retry-After"] = retry_after
        message = "There have been too many calls to this ad-account. Wait a bit and try again."
        self.answer_next(status, meta_error(status, code, message)[1], headers)

    def server_error_next(self, status: int = 500, times: int = 1) -> None:
        error_status, body = meta_error(status, 2, "Service temporarily unavailable")
        self.answer_next(error_status, body, times=times)

    def expired_token_next(self) -> None:
        status, body = meta_error(
            401,
            190,
            f"Error validating access token: Session has expired ({self.access_token})",
            463,
        )
        self.answer_next(status, body)

    def expire_token_after(self, requests: int | None) -> None:
        """The token expires once this many more audience requests were taken: later ones
        are refused as Meta refuses an expired token, until `access_token` is renewed."""
        with self.lock:
            self.token_lasts_for = requests

    def refuse_events(self, *event_ids: str) -> None:
        with self.lock:
            self.refused_event_ids.update(event_ids)

    # -- the API -----------------------------------------------------------------------

    def handle(self, request: Request) -> Answer:
        login = self.handle_login(request)
        if login is not None:
            return login
        path = request.path.split("?", 1)[0]
        if "access_token" in request.path:
            return Answer(*meta_error(400, 100, "this stand-in expects the token in a header"))
        node = _NODE.match(path)
        if node and request.method == "GET" and node.group(1) == VERSION:
            return self._audience_size(node.group(2), request)
        match = _PATH.match(path)
        if not match or match.group(1) != VERSION:
            return Answer(*meta_error(400, 2500, "Unknown path components", kind="OAuthException"))
        if request.headers.get("authorization") != f"Bearer {self.access_token}":
            return Answer(
                *meta_error(401, 190, "Invalid OAuth access token - Cannot parse access token")
            )
        object_id, edge = match.group(2), match.group(3)
        if not request.headers.get("content-type", "").startswith("application/json"):
            return Answer(*meta_error(400, 100, "expected a JSON body"))
        try:
            body = request.json()
        except ValueError:
            return Answer(*meta_error(400, 100, "The body is not JSON"))
        if edge == "users":
            if request.method not in ("POST", "DELETE"):
                return Answer(*meta_error(400, 100, "Unsupported method"))
            if object_id not in self.audiences:
                return Answer(*_no_such_object(object_id))
            expired = self.token_lasts_for == 0  # (handle runs under the lock)
            if self.token_lasts_for:
                self.token_lasts_for -= 1
            if expired:
                return Answer(
                    *meta_error(401, 190, "Error validating access token: Session has expired", 463)
                )
            return self._users(object_id, request.method, body)
        if request.method != "POST":
            return Answer(*meta_error(400, 100, "Unsupported method"))
        if object_id not in self.datasets:
            return Answer(*_no_such_object(object_id))
        return self._events(object_id, body)

    def _audience_size(self, audience_id: str, request: Request) -> Answer:
        """`GET /{version}/{audienceId}?fields=approximate_count_lower_bound,
        approximate_count_upper_bound` (CONTRACT §15), from the rows it holds."""
        if request.headers.get("authorization") != f"Bearer {self.access_token}":
            return Answer(
                *meta_error(401, 190, "Invalid OAuth access token - Cannot parse access token")
            )
        if audience_id not in self.audiences:
            return Answer(*_no_such_object(audience_id))
        query = parse_qs(urlsplit(request.path).query)
        fields = set(",".join(query.get("fields", [])).split(","))
        if not fields <= SIZE_FIELDS | {"id", "name"}:
            return Answer(*meta_error(400, 100, "(#100) Tried accessing nonexisting field"))
        lower, upper = self.sizes.get(audience_id) or estimate(len(self.audiences[audience_id]))
        answer: dict[str, Any] = {"id": audience_id}
        if "approximate_count_lower_bound" in fields:
            answer["approximate_count_lower_bound"] = lower
        if "approximate_count_upper_bound" in fields:
            answer["approximate_count_upper_bound"] = upper
        return Answer(200, answer)

    def _users(self, audience_id: str, method: str, body: Any) -> Answer:
        payload = body.get("payload") if isinstance(body, dict) else None
        session = body.get("session") if isinstance(body, dict) else None
        if not isinstance(payload, dict) or payload.get("schema") != SCHEMA:
            return Answer(*meta_error(400, 100, "(#100) Invalid parameter: payload.schema"))
        data = payload.get("data")
        if not isinstance(data, list) or not data:
            return Answer(*meta_error(400, 100, "(#100) Invalid parameter: payload.data"))
        if len(data) > 10_000:
            return Answer(*meta_error(400, 100, "(#100) Too many users in one request"))
        if not isinstance(session, dict) or set(session) != SESSION_KEYS:
            return Answer(*meta_error(400, 100, "(#100) Invalid parameter: session"))
        invalid: list[Any] = []
        rows = self.audiences[audience_id]
        for row in data:
            if (
                not isinstance(row, list)
                or len(row) != 6
                or not all(
                    isinstance(cell, str) and (cell == "" or _HASH.match(cell)) for cell in row
                )
                or not any(row)
            ):
                invalid.append(row)
                continue
            if method == "POST":
                rows.add(tuple(row))
            else:
                rows.discard(tuple(row))
        return Answer(
            200,
            {
                "audience_id": audience_id,
                "session_id": session["session_id"],
                "num_received": len(data),
                "num_invalid_entries": len(invalid),
                "invalid_entry_samples": {str(i): row for i, row in enumerate(invalid[:5])},
            },
        )

    def _events(self, dataset_id: str, body: Any) -> Answer:
        events = body.get("data") if isinstance(body, dict) and set(body) == {"data"} else None
        if not isinstance(events, list) or not events:
            return Answer(*meta_error(400, 100, "(#100) The parameter data is required"))
        if len(events) > 1_000:
            return Answer(*meta_error(400, 100, "(#100) Too many events in one request", 2804015))
        for index, event in enumerate(events):
            problem = _event_problem(event)
            if problem is None and event["event_id"] in self.refused_event_ids:
                problem = "refused by the test"
            if problem:
                return Answer(
                    *meta_error(
                        400, 100, f"(#100) Invalid parameter: data[{index}]: {problem}", 2804019
                    )
                )
        self.datasets[dataset_id].extend(events)
        return Answer(
            200,
            {
                "events_received": len(events),
                "messages": [],
                "fbtrace_id": "A" + secrets.token_hex(10),
            },
        )


def _no_such_object(object_id: str) -> tuple[int, dict[str, Any]]:
    return meta_error(
        400,
        100,
        f"Unsupported post request. Object with ID '{object_id}' does not exist, cannot be "
        "loaded due to missing permissions, or does not support this operation",
        33,
        kind="GraphMethodException",
    )


def _event_problem(event: Any) -> str | None:
    if not isinstance(event, dict) or set(event) != EVENT_KEYS:
        return "the event's keys"
    if event["event_name"] != "Purchase" or event["action_source"] != "physical_store":
        return "event_name or action_source"
    if not isinstance(event["event_time"], int) or isinstance(event["event_time"], bool):
        return "event_time must be Unix seconds"
    if not isinstance(event["event_id"], str) or not event["event_id"]:
        return "event_id"
    user_data = event["user_data"]
    if not isinstance(user_data, dict) or not user_data or not set(user_data) <= USER_DATA_KEYS:
        return "user_data"
    for values in user_data.values():
        if not (isinstance(values, list) and len(values) == 1 and _HASH.match(str(values[0]))):
            return "user_data values must be one SHA-256 each"
    custom = event["custom_data"]
    if not isinstance(custom, dict) or set(custom) != {"value", "currency", "order_id"}:
        return "custom_data"
    if not isinstance(custom["value"], (int, float)) or isinstance(custom["value"], bool):
        return "custom_data.value must be a number"
    if not (isinstance(custom["currency"], str) and re.fullmatch(r"[A-Z]{3}", custom["currency"])):
        return "custom_data.currency"
    return None
