"""Meta's Marketing API over plain HTTP: customer-list audiences and offline purchases.

Why not the facebook-business SDK: it sends the access token as the `access_token`
query parameter, so the token sits in every URL, where proxies, load balancers and
error trackers log it. The Graph API accepts the same token in `Authorization: Bearer`,
which this client sends instead; the calls themselves are two documented JSON posts
that httpx speaks directly (CONTRACT §11).

- Audience: `POST {graph}/{version}/{audienceId}/users` adds, `DELETE` on the same path
  removes, JSON `{"payload": {"schema", "data"}, "session": {...}}`, at most 10,000 rows
  a request; one upload session (`session_id`, `batch_seq` from 1, `last_batch_flag`,
  `estimated_num_total`) spans the requests of one call.
- Conversions: `POST {graph}/{version}/{datasetId}/events`, JSON `{"data": [Event]}`,
  at most 1,000 events a request.
- Throttling: a refused call is tried again no sooner than its `Retry-After` nor than
  the longest `estimated_time_to_regain_access` (minutes) of its
  `X-Business-Use-Case-Usage` header (CONTRACT §15).
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

import httpx

from partnerlink.destinations.meta_errors import int_or_none, meta_error, throttled_seconds
from partnerlink.destinations.platform import (
    PlatformClient,
    PlatformError,
    chunks,
    garbage_answer,
    json_object,
    transport_error,
)

META_SCHEMA = ("EMAIL", "PHONE", "FN", "LN", "CT", "COUNTRY")
MAX_AUDIENCE_ROWS = 10_000
MAX_EVENTS = 1_000
AUDIENCE_SIZE_FIELDS = "approximate_count_lower_bound,approximate_count_upper_bound"

AudienceRow = Sequence[str]  # the six hashes of META_SCHEMA, "" for a missing one
T = TypeVar("T")

_SCHEMA_JSON = json.dumps(list(META_SCHEMA))
# Rows of lower-case hex hashes and commas: nothing in them needs a JSON escape, so
# their JSON is written by joining strings.
_HASH_LINES = re.compile(r"[0-9a-f,]*")


def _rows_json(rows: Sequence[AudienceRow]) -> str:
    return json.dumps([list(row) for row in rows])


def _lines_json(lines: Sequence[str]) -> str:
    """Rows given as their hashes joined by commas, as Meta's array of arrays: written
    directly (a 10,000-row body in milliseconds, where splitting the rows and encoding
    them took a tenth of a second), unless a row holds anything but hashes."""
    if not _HASH_LINES.fullmatch(",".join(lines)):
        return _rows_json([line.split(",") for line in lines])
    return "[" + ",".join(['["' + line.replace(",", '","') + '"]' for line in lines]) + "]"


@dataclass
class MetaAudienceReport:
    """What Meta said about one add or remove call (all its requests)."""

    session_id: int
    rows: int = 0
    num_received: int = 0
    num_invalid_entries: int = 0

    @property
    def rejected(self) -> int:
        return self.num_invalid_entries

    def as_report(self) -> dict[str, int]:
        return {
            "num_received": self.num_received,
            "num_invalid_entries": self.num_invalid_entries,
        }


@dataclass
class MetaEventsReport:
    events: int = 0
    events_received: int = 0
    rejected: int = 0
    fbtrace_id: str | None = None
    messages: list[str] = field(default_factory=list)

    def as_report(self) -> dict[str, Any]:
        report: dict[str, Any] = {"events_received": self.events_received}
        if self.fbtrace_id:
            report["fbtrace_id"] = self.fbtrace_id
        return report


def meta_purchase_event(
    *,
    event_id: str,
    created_at: datetime,
    value: float,
    currency: str,
    order_id: str,
    user_data: Mapping[str, list[str]],
) -> dict[str, Any]:
    """One offline purchase as CONTRACT §11 shapes it; `value` in major units."""
    return {
        "event_name": "Purchase",
        "event_time": int(created_at.timestamp()),
        "action_source": "physical_store",
        "event_id": event_id,
        "user_data": dict(user_data),
        "custom_data": {"value": value, "currency": currency, "order_id": order_id},
    }


class MetaClient(PlatformClient):
    """One access token's calls. `client` is shared by the caller or made here."""

    name = "Meta"

    def __init__(
        self,
        *,
        graph_url: str,
        api_version: str,
        access_token: str,
        client: httpx.Client | None = None,
    ) -> None:
        self.base = f"{graph_url.rstrip('/')}/{api_version.strip('/')}"
        self.access_token = access_token
        super().__init__(client)

    # -- audiences -------------------------------------------------------------------

    def add_users(self, audience_id: str, rows: Sequence[AudienceRow]) -> MetaAudienceReport:
        return self._upload("POST", audience_id, rows, _rows_json)

    def remove_users(self, audience_id: str, rows: Sequence[AudienceRow]) -> MetaAudienceReport:
        return self._upload("DELETE", audience_id, rows, _rows_json)

    def add_user_lines(self, audience_id: str, lines: Sequence[str]) -> MetaAudienceReport:
        """`add_users` of rows given as their six hashes joined by commas."""
        return self._upload("POST", audience_id, lines, _lines_json)

    def remove_user_lines(self, audience_id: str, lines: Sequence[str]) -> MetaAudienceReport:
        return self._upload("DELETE", audience_id, lines, _lines_json)

    def _upload(
        self,
        method: str,
        audience_id: str,
        rows: Sequence[T],
        data_json: Callable[[Sequence[T]], str],
    ) -> MetaAudienceReport:
        # Meta's session id is the sender's choice: a positive 63-bit number.
        report = MetaAudienceReport(session_id=secrets.randbits(62) + 1)
        batches = list(chunks(rows, MAX_AUDIENCE_ROWS))
        for seq, batch in enumerate(batches, start=1):
            session = {
                "session_id": report.session_id,
                "batch_seq": seq,
                "last_batch_flag": seq == len(batches),
                "estimated_num_total": len(rows),
            }
            # {"payload": {"schema": [...], "data": [[...], ...]}, "session": {...}}, with
            # the data, nearly all of the body, written by `data_json`.
            body = (
                f'{{"payload":{{"schema":{_SCHEMA_JSON},"data":{data_json(batch)}}},'
                f'"session":{json.dumps(session)}}}'
            )
            try:
                answer = self._call(method, f"{_digits(audience_id)}/users", body)
            except PlatformError as error:
                error.done = report.rows
                raise
            report.rows += len(batch)
            report.num_received += _count(answer.get("num_received"), len(batch))
            report.num_invalid_entries += _count(answer.get("num_invalid_entries"), 0)
        return report

    def audience_size(self, audience_id: str) -> tuple[int | None, int | None]:
        """Meta's estimate of how many people the audience holds (CONTRACT §15): `GET
        {graph}/{version}/{audienceId}?fields=approximate_count_lower_bound,
        approximate_count_upper_bound`, read-only. A bound Meta does not give (or gives
        as -1, its "not available") is None. Any failure raises PlatformError."""
        headers = {"Authorization": f"Bearer {self.access_token}"}
        try:
            response = self.client.get(
                f"{self.base}/{_digits(audience_id)}",
                params={"fields": AUDIENCE_SIZE_FIELDS},
                headers=headers,
            )
        except httpx.HTTPError as error:
            raise transport_error(self.name, error) from None
        answer = json_object(response)
        if answer is None:
            raise garbage_answer(self.name, response)
        if response.status_code != 200 or "error" in answer:
            raise PlatformError(
                "retry", f"Meta answered HTTP {response.status_code}", status=response.status_code
            )
        lower = int_or_none(answer.get("approximate_count_lower_bound"))
        upper = int_or_none(answer.get("approximate_count_upper_bound"))
        return (
            lower if lower is not None and lower >= 0 else None,
            upper if upper is not None and upper >= 0 else None,
        )

    # -- conversions -----------------------------------------------------------------

    def send_events(self, dataset_id: str, events: Sequence[Mapping[str, Any]]) -> MetaEventsReport:
        """Sends every event, 1,000 a request. Meta refuses a whole request for one
        invalid event (error 100): the request is then split in halves until the
        refused events stand alone; they count as rejected, the others as sent."""
        report = MetaEventsReport()
        for batch in chunks(events, MAX_EVENTS):
            try:
                self._send_event_batch(_digits(dataset_id), batch, report)
            except PlatformError as error:
                error.done = report.events
                raise
        return report

    def _send_event_batch(
        self, dataset_id: str, batch: Sequence[Mapping[str, Any]], report: MetaEventsReport
    ) -> None:
        try:
            answer = self._call("POST", f"{dataset_id}/events", {"data": list(batch)})
        except PlatformError as error:
            if error.kind != "rejected":
                raise
            if len(batch) == 1:
                report.rejected += 1
                report.events += 1
                report.messages.append(error.message)
                return
            middle = len(batch) // 2
            self._send_event_batch(dataset_id, batch[:middle], report)
            self._send_event_batch(dataset_id, batch[middle:], report)
            return
        report.events += len(batch)
        report.events_received += _count(answer.get("events_received"), len(batch))
        trace = answer.get("fbtrace_id")
        report.fbtrace_id = str(trace)[:100] if trace else report.fbtrace_id
        messages = answer.get("messages")
        if isinstance(messages, list):
            report.messages.extend(str(message)[:200] for message in messages[:5])

    # -- HTTP ------------------------------------------------------------------------

    def _call(self, method: str, path: str, body: dict[str, Any] | str) -> dict[str, object]:
        """`body` is JSON: an object, or its text already written."""
        headers = {"Authorization": f"Bearer {self.access_token}"}
        try:
            if isinstance(body, str):
                headers["Content-Type"] = "application/json"
                response = self.client.request(
                    method, f"{self.base}/{path}", content=body.encode(), headers=headers
                )
            else:
                response = self.client.request(
                    method, f"{self.base}/{path}", json=body, headers=headers
                )
        except httpx.HTTPError as error:
            raise transport_error(self.name, error) from None
        answer = json_object(response)
        if answer is None:
            garbage = garbage_answer(self.name, response)
            garbage.retry_after = throttled_seconds(response.headers)
            raise garbage
        if response.status_code == 200 and "error" not in answer:
            return answer
        raise meta_error(response, answer, events=path.endswith("/events"))


def _digits(value: str) -> str:
    """Ids go into the path: only digits, so that none can change the path."""
    if not (value.isascii() and value.isdigit()):
        raise PlatformError("invalid", "The Meta id on this destination must be digits only.")
    return value


def _count(value: object, default: int) -> int:
    number = int_or_none(value)
    return default if number is None else number
