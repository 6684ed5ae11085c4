"""One destination's way to its platform: the rows it sends and the calls it makes.

The sync engine speaks to every destination alike: an audience sender turns a
customer into the row its platform matches on (stored as sent, so a removal sends
the same row back) and adds or removes rows; an events sender sends orders. The
protocol itself is meta.py's and google.py's.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol

import httpx

from partnerlink.audiences.hashing import CustomerRow, meta_line
from partnerlink.destinations import google, meta
from partnerlink.destinations.identifiers import (
    Identity,
    google_user_data,
    meta_user_data,
)
from partnerlink.destinations.models import Destination
from partnerlink.settings import Settings


@dataclass(frozen=True)
class Sent:
    """What a call did: rows taken, rows the platform refused, its answer for lastReport."""

    taken: int
    rejected: int
    report: dict[str, Any]


@dataclass(frozen=True)
class Sale:
    """An order as a conversion: its stable event id, time, value and buyer."""

    event_id: str
    order_id: str
    created_at: Any
    value: float
    currency: str
    identity: Identity


class AudienceSender(Protocol):
    def row(self, customer: CustomerRow) -> str:
        """The row of a customer given in the export's order (email, phone, first name,
        last name, city, country, postal code): no Identity is built per member of a
        list, which cost as much as hashing it."""
        ...

    def add(self, rows: Sequence[str]) -> Sent: ...
    def remove(self, rows: Sequence[str]) -> Sent: ...


class EventSender(Protocol):
    def events(self, sales: Sequence[Sale]) -> list[dict[str, Any]]:
        """The sales as the platform's events (their identifiers hashed): no call made."""
        ...

    def post(self, events: Sequence[dict[str, Any]]) -> Sent: ...


class PlatformReport(Protocol):
    """A platform's answer to one call: the rows it refused, and what lastReport keeps."""

    @property
    def rejected(self) -> int: ...

    def as_report(self) -> dict[str, Any]: ...


class MetaAudience:
    batch = meta.MAX_AUDIENCE_ROWS

    def __init__(self, client: meta.MetaClient, audience_id: str) -> None:
        self.client = client
        self.audience_id = audience_id

    def row(self, customer: CustomerRow) -> str:
        return meta_line(customer)

    def audience_size(self) -> tuple[int | None, int | None]:
        """Meta's estimate of the audience's size: (lower bound, upper bound)."""
        return self.client.audience_size(self.audience_id)

    def _sent(self, report: meta.MetaAudienceReport, rows: int) -> Sent:
        return Sent(rows, report.rejected, report.as_report())

    def add(self, rows: Sequence[str]) -> Sent:
        report = self.client.add_user_lines(self.audience_id, rows)
        return self._sent(report, len(rows))

    def remove(self, rows: Sequence[str]) -> Sent:
        report = self.client.remove_user_lines(self.audience_id, rows)
        return self._sent(report, len(rows))


class Events:
    """Orders as one platform's conversion events, by one rule for every platform: each
    sale becomes the platform's purchase event (`events`, by `event_of`: the hashing,
    done while the request before is out), the chunk goes in one call (`post`, by
    `send_events`: the client, bound to the destination's target), and the answer is a
    `Sent`. `batch` is the platform's most events a call."""

    def __init__(
        self,
        batch: int,
        event_of: Callable[[Sale], dict[str, Any]],
        send_events: Callable[[Sequence[dict[str, Any]]], PlatformReport],
    ) -> None:
        self.batch = batch
        self.event_of = event_of
        self.send_events = send_events

    def events(self, sales: Sequence[Sale]) -> list[dict[str, Any]]:
        return [self.event_of(sale) for sale in sales]

    def post(self, events: Sequence[dict[str, Any]]) -> Sent:
        report = self.send_events(events)
        return Sent(len(events), report.rejected, report.as_report())


def _meta_event(sale: Sale) -> dict[str, Any]:
    return meta.meta_purchase_event(
        event_id=sale.event_id,
        created_at=sale.created_at,
        value=sale.value,
        currency=sale.currency,
        order_id=sale.order_id,
        user_data=meta_user_data(sale.identity),
    )


def _google_event(sale: Sale) -> dict[str, Any]:
    return google.google_purchase_event(
        transaction_id=sale.event_id,
        created_at=sale.created_at,
        value=sale.value,
        currency=sale.currency,
        user_data=google_user_data(sale.identity),
    )


class GoogleAudience:
    batch = google.MAX_MEMBERS

    def __init__(self, client: google.GoogleClient, target: google.GoogleTarget) -> None:
        self.client = client
        self.target = target

    def row(self, customer: CustomerRow) -> str:
        identity = Identity(*customer)
        return json.dumps(google_user_data(identity), separators=(",", ":"), sort_keys=True)

    def add(self, rows: Sequence[str]) -> Sent:
        report = self.client.add_members(self.target, [json.loads(row) for row in rows])
        return Sent(len(rows), report.rejected, report.as_report())

    def remove(self, rows: Sequence[str]) -> Sent:
        report = self.client.remove_members(self.target, [json.loads(row) for row in rows])
        return Sent(len(rows), report.rejected, report.as_report())


def sender_for(
    destination: Destination,
    credentials: dict[str, str],
    settings: Settings,
    http: httpx.Client,
) -> MetaAudience | GoogleAudience | Events:
    target = destination.target
    if destination.platform == "meta":
        client = meta.MetaClient(
            graph_url=settings.meta_graph_url,
            api_version=settings.meta_api_version,
            access_token=credentials["accessToken"],
            client=http,
        )
        if destination.kind == "audience":
            return MetaAudience(client, target["audienceId"])
        return Events(
            meta.MAX_EVENTS, _meta_event, partial(client.send_events, target["datasetId"])
        )
    google_client = google.GoogleClient(
        datamanager_url=settings.google_datamanager_url,
        token_url=settings.google_token_url,
        credentials=google.GoogleCredentials(
            client_id=credentials["clientId"],
            client_secret=credentials["clientSecret"],
            refresh_token=credentials["refreshToken"],
        ),
        client=http,
    )
    audience = destination.kind == "audience"
    google_target = google.GoogleTarget(
        customer_id=target["customerId"],
        product_destination_id=target["userListId" if audience else "conversionActionId"],
        login_customer_id=target.get("loginCustomerId"),
        consent=destination.consent,
    )
    if audience:
        return GoogleAudience(google_client, google_target)
    return Events(
        google.MAX_EVENTS, _google_event, partial(google_client.send_events, google_target)
    )
