"""Google's Data Manager API over plain HTTP: Customer Match members and offline sales.

An access token comes from `POST {token_url}` (form `grant_type=refresh_token`,
`client_id`, `client_secret`, `refresh_token`) and is reused, process-wide, until a
minute before its `expires_in`; every call carries it in `Authorization: Bearer`.

- Audience: `POST {datamanager}/v1/audienceMembers:ingest` adds and
  `.../audienceMembers:remove` removes, at most 10,000 members a request.
- Conversions: `POST {datamanager}/v1/events:ingest`, at most 2,000 events a request.
- Verdicts: `GET {datamanager}/v1/requestStatus:retrieve?requestId=...` (Google's REST
  mapping of RetrieveRequestStatus: a GET, the request id as a query parameter) answers
  what Google made of an ingest request once processed (CONTRACT §15; verdicts.py).

Bodies carry `destinations` (operating account, optional login account, the user list
or conversion action as `productDestinationId`), `encoding: "HEX"` and, only when the
merchant stated it and only on the ingest calls, the request-level `consent` (CONTRACT
§11): RemoveAudienceMembersRequest has no `consent` field, and Google refuses a body
that does not parse as its type (400). The answer's `requestId` is what `lastReport`
keeps; each ingest request's id, with how many rows it carried, is also answered in
`requests`, for the worker to read its verdict.

Why plain httpx and not Google's google-ads-datamanager client (0.9.4, tried against
the local stand-in): its REST transport does reach a local http server (`host`,
`url_scheme="http"`) with google-auth refresh-token credentials at our token URL, and
`invalid_grant` surfaces as google.auth's RefreshError; but
- it sends enums as numbers (`?$alt=json;enum-encoding=int`: `"encoding": 1`,
  `"accountType": 1`), not the `"HEX"` / `"GOOGLE_ADS"` CONTRACT §11 writes;
- every member becomes a proto-plus message, then protobuf JSON: measured, about an
  order of magnitude slower to build and serialize than dicts and `json.dumps`,
  minutes of CPU for a 1,000,000-member sync (bench/README.md);
- it brings grpcio, protobuf, google-api-core and requests into the worker for two
  JSON posts.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

import httpx

from partnerlink.destinations.google_oauth import (
    TOKENS,
    GoogleCredentials,
    TokenCache,
    access_token,
    token_key,
)
from partnerlink.destinations.platform import (
    PlatformClient,
    PlatformError,
    busy_platform,
    chunks,
    garbage_answer,
    json_object,
    known_code,
    platform_said,
    transport_error,
)

# GoogleCredentials and TokenCache lived here at "platforms: clients ready": still importable.
__all__ = [
    "MAX_EVENTS",
    "MAX_MEMBERS",
    "TOKENS",
    "GoogleClient",
    "GoogleCredentials",
    "GoogleReport",
    "GoogleTarget",
    "TokenCache",
    "google_purchase_event",
]

MAX_MEMBERS = 10_000
MAX_EVENTS = 2_000
# The calls whose body has a request-level `consent`, and whose verdict is read later
# (IngestAudienceMembersRequest, IngestEventsRequest; RemoveAudienceMembersRequest has
# neither a `consent` field nor a match rate).
INGEST_METHODS = frozenset({"audienceMembers:ingest", "events:ingest"})
ConsentValue = Literal["granted", "denied"]

# fieldViolations name the refused rows: `audienceMembers[12].userData...` (or snake_case).
_ROW_FIELD = re.compile(r"^(?:audience_?[mM]embers|events)\[(\d+)\]")

# google.rpc.Code names: an error's `status` is shown only when it is one of them.
RPC_CODES = frozenset(
    {
        "CANCELLED",
        "UNKNOWN",
        "INVALID_ARGUMENT",
        "DEADLINE_EXCEEDED",
        "NOT_FOUND",
        "ALREADY_EXISTS",
        "PERMISSION_DENIED",
        "UNAUTHENTICATED",
        "RESOURCE_EXHAUSTED",
        "FAILED_PRECONDITION",
        "ABORTED",
        "OUT_OF_RANGE",
        "UNIMPLEMENTED",
        "INTERNAL",
        "UNAVAILABLE",
        "DATA_LOSS",
    }
)
# Google's own messages that may be shown to the merchant: known, credential-free, matched
# whole (platform.platform_said); any other message is left out.
KNOWN_MESSAGES = tuple(
    re.compile(pattern)
    for pattern in (
        r"Request had invalid authentication credentials\.(?: Expected OAuth 2 access token, "
        r"login cookie or other valid authentication credential\. See https://developers\."
        r"google\.com/identity/sign-in/web/devconsole-project\.)?",
        r"The caller does not have permission",
        r"Request contains an invalid argument\.",
        r"The service is currently unavailable\.",
        r"Internal error encountered\.",
        r"Quota exceeded for quota metric",
        r"Resource has been exhausted \(e\.g\. check quota\)\.",
        r"Requested entity was not found\.",
    )
)


@dataclass(frozen=True)
class GoogleTarget:
    """Where members or events go: the Ads customer, the user list or conversion action."""

    customer_id: str
    product_destination_id: str
    login_customer_id: str | None = None
    consent: Mapping[str, ConsentValue] | None = None  # {"adUserData", "adPersonalization"}

    def destinations(self) -> list[dict[str, Any]]:
        destination: dict[str, Any] = {
            "operatingAccount": {
                "accountType": "GOOGLE_ADS",
                "accountId": _digits(self.customer_id),
            }
        }
        if self.login_customer_id:
            destination["loginAccount"] = {
                "accountType": "GOOGLE_ADS",
                "accountId": _digits(self.login_customer_id),
            }
        destination["productDestinationId"] = _digits(self.product_destination_id)
        return [destination]

    def request_consent(self) -> dict[str, str] | None:
        if not self.consent:
            return None
        return {
            name: "CONSENT_GRANTED" if value == "granted" else "CONSENT_DENIED"
            for name, value in self.consent.items()
            if name in ("adUserData", "adPersonalization") and value in ("granted", "denied")
        } or None


@dataclass
class GoogleReport:
    """What Google said about one call (all its requests)."""

    sent: int = 0
    rejected: int = 0
    request_ids: list[str] = field(default_factory=list)
    # Each ingest request Google took, with how many rows it carried: (request id, rows).
    requests: list[tuple[str, int]] = field(default_factory=list)

    def as_report(self) -> dict[str, Any]:
        return {
            "requestId": self.request_ids[-1] if self.request_ids else None,
            "requests": [[request_id, rows] for request_id, rows in self.requests],
        }


def google_purchase_event(
    *,
    transaction_id: str,
    created_at: datetime,
    value: float,
    currency: str,
    user_data: Mapping[str, Any],
) -> dict[str, Any]:
    """One in-store sale as CONTRACT §11 shapes it; `value` in major units."""
    stamp = created_at.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    return {
        "transactionId": transaction_id,
        "eventTimestamp": stamp,
        "conversionValue": value,
        "currency": currency,
        "eventSource": "IN_STORE",
        "userData": dict(user_data),
    }


class GoogleClient(PlatformClient):
    name = "Google"

    def __init__(
        self,
        *,
        datamanager_url: str,
        token_url: str,
        credentials: GoogleCredentials,
        client: httpx.Client | None = None,
        tokens: TokenCache = TOKENS,
    ) -> None:
        self.base = datamanager_url.rstrip("/")
        self.token_url = token_url
        self.credentials = credentials
        self.tokens = tokens
        self._token_key = token_key(token_url, credentials)
        super().__init__(client)

    # -- audiences and events --------------------------------------------------------

    def add_members(
        self, target: GoogleTarget, user_data: Sequence[Mapping[str, Any]]
    ) -> GoogleReport:
        return self._send(
            "audienceMembers:ingest", "audienceMembers", target, user_data, MAX_MEMBERS
        )

    def remove_members(
        self, target: GoogleTarget, user_data: Sequence[Mapping[str, Any]]
    ) -> GoogleReport:
        return self._send(
            "audienceMembers:remove", "audienceMembers", target, user_data, MAX_MEMBERS
        )

    def send_events(
        self, target: GoogleTarget, events: Sequence[Mapping[str, Any]]
    ) -> GoogleReport:
        return self._send("events:ingest", "events", target, events, MAX_EVENTS)

    def _send(
        self,
        method: str,
        key: str,
        target: GoogleTarget,
        items: Sequence[Mapping[str, Any]],
        limit: int,
    ) -> GoogleReport:
        report = GoogleReport()
        if key == "audienceMembers":
            items = [{"userData": dict(user_data)} for user_data in items]
        for batch in chunks(items, limit):
            try:
                self._send_batch(method, key, target, list(batch), report)
            except PlatformError as error:
                error.done = report.sent + report.rejected
                raise
        return report

    def _send_batch(
        self,
        method: str,
        key: str,
        target: GoogleTarget,
        batch: list[Mapping[str, Any]],
        report: GoogleReport,
    ) -> None:
        """One request; when Google refuses it naming rows, those count as rejected and
        the request goes again once without them."""
        for _attempt in range(2):
            if not batch:
                return
            body: dict[str, Any] = {"destinations": target.destinations(), key: batch}
            consent = target.request_consent() if method in INGEST_METHODS else None
            if consent:
                body["consent"] = consent
            body["encoding"] = "HEX"
            try:
                answer = self._call(f"v1/{method}", body)
            except PlatformError as error:
                if error.kind != "rejected" or not error.rows:
                    raise
                refused = {index for index in error.rows if index < len(batch)}
                report.rejected += len(refused)
                batch = [item for index, item in enumerate(batch) if index not in refused]
                continue
            report.sent += len(batch)
            request_id = answer.get("requestId")
            if isinstance(request_id, str) and request_id:
                report.request_ids.append(request_id[:200])
                if method in INGEST_METHODS:
                    report.requests.append((request_id[:200], len(batch)))
            return
        raise PlatformError("invalid", "Google refused the request twice, naming rows each time.")

    # -- verdicts ---------------------------------------------------------------------

    def request_status(self, request_id: str) -> dict[str, object]:
        """Google's RetrieveRequestStatusResponse for one request, as JSON
        (`requestStatusPerDestination`: each destination's `requestStatus`, record count,
        match-rate range, `errorInfo`, `warningInfo`); errors as every call's."""
        return self._call("v1/requestStatus:retrieve", None, params={"requestId": request_id})

    # -- HTTP ------------------------------------------------------------------------

    def access_token(self) -> str:
        return access_token(self.client, self.token_url, self.credentials, self.tokens)

    def _call(
        self, path: str, body: dict[str, Any] | None, params: dict[str, str] | None = None
    ) -> dict[str, object]:
        """A POST of `body`, or a GET with `params` when there is no body."""
        for attempt in range(2):
            token = self.access_token()
            headers = {"Authorization": f"Bearer {token}"}
            try:
                if body is None:
                    response = self.client.get(
                        f"{self.base}/{path}", params=params, headers=headers
                    )
                else:
                    response = self.client.post(f"{self.base}/{path}", json=body, headers=headers)
            except httpx.HTTPError as error:
                raise transport_error(self.name, error) from None
            if response.status_code == 401 and attempt == 0:
                # The token may have been revoked early: one new token, one more try.
                self.tokens.drop(self._token_key)
                continue
            answer = json_object(response)
            if answer is None:
                raise garbage_answer(self.name, response)
            if response.status_code == 200 and "error" not in answer:
                return answer
            raise self._error(response, answer)
        raise AssertionError("unreachable")  # pragma: no cover

    def _error(self, response: httpx.Response, answer: dict[str, object]) -> PlatformError:
        status = response.status_code
        error = answer.get("error")
        details: dict[str, object] = error if isinstance(error, dict) else {}
        state = known_code(details.get("status"), RPC_CODES)
        said = platform_said(
            f"Google answered HTTP {status}" + (f" {state}" if state else ""),
            (details.get("message"),),
            KNOWN_MESSAGES,
        )
        if status == 429 or status >= 500:
            return busy_platform(said, response)
        if status == 401:
            return PlatformError(
                "credentials",
                f"{said}. Google no longer accepts these credentials: authorize again and "
                "save the new credentials on this destination.",
                status=status,
            )
        if status == 403:
            return PlatformError(
                "credentials",
                f"{said}. The Google account behind these credentials may not manage this "
                "Google Ads account (check the customer id and the login customer id, "
                "and that the account has access).",
                status=status,
            )
        rows = _rejected_rows(details)
        if status == 400 and rows:
            return PlatformError(
                "rejected", said, rejected_rows=len(rows), status=status, rows=rows
            )
        return PlatformError(
            "invalid",
            f"{said}. Check the customer id, the user list or conversion action id.",
            status=status,
        )


def _rejected_rows(details: dict[str, object]) -> list[int]:
    """Row indexes in google.rpc.BadRequest fieldViolations (`audienceMembers[3]...`)."""
    rows: set[int] = set()
    extra = details.get("details")
    for item in extra if isinstance(extra, list) else []:
        violations = item.get("fieldViolations") if isinstance(item, dict) else None
        for violation in violations if isinstance(violations, list) else []:
            name = violation.get("field") if isinstance(violation, dict) else None
            match = _ROW_FIELD.match(name) if isinstance(name, str) else None
            if match:
                rows.add(int(match.group(1)))
    return sorted(rows)


def _digits(value: str) -> str:
    if not (value.isascii() and value.isdigit()):
        raise PlatformError("invalid", "The Google ids on this destination must be digits only.")
    return value
