"""Destination requests, checked field by field (CONTRACT.md §11), and the Destination reply.

A request is read from the raw JSON object rather than a pydantic model so that every
refusal names its field with `invalid_field`, all of them at once, and nothing is stored.
The models of request_shapes.py describe the request bodies in the merchant API's
OpenAPI document. The reply never carries the credentials.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from partnerlink.audiences.queries import SEGMENTS
from partnerlink.destinations.models import Destination, DestinationRun
from partnerlink.problems import ValidationFailed

PLATFORMS = ("meta", "google")
KINDS = ("audience", "conversions")
CONSENT_VALUES = ("granted", "denied")
CONSENT_FIELDS = ("adUserData", "adPersonalization")
MAX_SECRET = 4096
MAX_DIGITS = 30

CREDENTIAL_FIELDS = {
    "meta": ("accessToken",),
    "google": ("clientId", "clientSecret", "refreshToken"),
}
# (required, optional) digit fields of `target`, per platform and kind.
TARGET_FIELDS: dict[tuple[str, str], tuple[tuple[str, ...], tuple[str, ...]]] = {
    ("meta", "audience"): (("audienceId",), ()),
    ("meta", "conversions"): (("datasetId",), ()),
    ("google", "audience"): (("customerId", "userListId"), ("loginCustomerId",)),
    ("google", "conversions"): (("customerId", "conversionActionId"), ("loginCustomerId",)),
}


# Google Ads shows a customer id as 123-456-7890: those dashes, or none, around 10 digits.
CUSTOMER_ID = re.compile(r"[0-9]{10}|[0-9]{3}-[0-9]{3}-[0-9]{4}")
CUSTOMER_ID_FIELDS = ("customerId", "loginCustomerId")
T = TypeVar("T")


def invalid(field: str, message: str) -> ValidationFailed:
    return refusal([{"field": field, "message": message}])


def refusal(errors: list[dict[str, str]]) -> ValidationFailed:
    """Every problem of a request in one answer (a form shows them all at once); the
    detail names the first."""
    first = errors[0]
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return ValidationFailed(f"{first['field']} {first['message']}{more}", errors=errors)


class Problems:
    """Collects the refusals of a request's parts instead of stopping at the first."""

    def __init__(self) -> None:
        self.errors: list[dict[str, str]] = []

    def add(self, field: str, message: str) -> None:
        self.errors.append({"field": field, "message": message})

    def read(self, reader: Callable[..., T], *args: Any) -> T | None:
        try:
            return reader(*args)
        except ValidationFailed as error:
            self.errors.extend(error.errors or [])
            return None

    def check(self) -> None:
        if self.errors:
            raise refusal(self.errors)


def _one_of(body: dict[str, Any], field: str, allowed: tuple[str, ...]) -> str:
    value = body.get(field)
    if value not in allowed:
        raise invalid(field, "must be " + " or ".join(allowed))
    return str(value)


def segment_of(value: Any) -> str:
    if value not in SEGMENTS:
        raise invalid("segment", "must be one of " + ", ".join(SEGMENTS))
    return str(value)


def campaign_id_of(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip() or len(value) > 200:
        raise invalid("campaignId", "must be a campaign id of this profile")
    return value


def printable_ascii(value: str) -> bool:
    """Space to `~` only: what an HTTP header or form may carry. A CR, LF, NUL, another
    control, a lone surrogate or any non-ASCII character made every sync fail in the HTTP
    client (LocalProtocolError), and a failure of sending is retried for ever."""
    return all(" " <= character <= "~" for character in value)


def credentials_of(platform: str, value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        raise invalid("credentials", "must be an object")
    credentials, problems = {}, Problems()
    for name in CREDENTIAL_FIELDS[platform]:
        secret = value.get(name)
        # Each refusal says which field, never what was in it.
        if not isinstance(secret, str) or not secret.strip() or len(secret) > MAX_SECRET:
            problems.add(f"credentials.{name}", "is required (a non-empty string)")
        elif not printable_ascii(secret):  # a trailing line break too: never stored cut
            problems.add(
                f"credentials.{name}",
                "must be printable ASCII only (no line break, control or non-ASCII "
                "character): copy it again from the platform",
            )
        else:
            credentials[name] = secret.strip()
    problems.check()
    return credentials


def _digits(value: Any) -> str | None:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        value = str(value)
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= MAX_DIGITS:
        return value
    return None


def target_of(platform: str, kind: str, value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        raise invalid("target", "must be an object")
    required, optional = TARGET_FIELDS[(platform, kind)]
    target, problems = {}, Problems()
    for name in required + optional:
        if name not in value or value[name] is None:
            if name in required:
                problems.add(f"target.{name}", "is required (digits only)")
            continue
        if name in CUSTOMER_ID_FIELDS:
            digits = _customer_id(value[name])
            if digits is None:
                problems.add(
                    f"target.{name}",
                    "must be a Google Ads customer id: 10 digits, e.g. 1234567890 or 123-456-7890",
                )
                continue
        else:
            digits = _digits(value[name])
            if digits is None:
                problems.add(f"target.{name}", "must be digits only (no dashes or spaces)")
                continue
        target[name] = digits
    problems.check()
    return target


def _customer_id(value: Any) -> str | None:
    """The 10 digits of a Google Ads customer id (stored without dashes); a number is
    read as its digits (a JSON number has no leading zero to keep)."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if isinstance(value, str) and CUSTOMER_ID.fullmatch(value):
        return value.replace("-", "")
    return None


def consent_of(platform: str, value: Any) -> dict[str, str] | None:
    if value is None:
        return None
    if platform != "google":
        raise invalid("consent", "is sent to Google only")
    if not isinstance(value, dict):
        raise invalid("consent", "must be an object")
    consent, problems = {}, Problems()
    for name in CONSENT_FIELDS:
        if value.get(name) not in CONSENT_VALUES:
            problems.add(f"consent.{name}", "must be granted or denied")
        else:
            consent[name] = str(value[name])
    problems.check()
    return consent


@dataclass(frozen=True)
class DestinationRequest:
    platform: str
    kind: str
    segment: str | None
    campaign_id: str | None
    credentials: dict[str, str]
    target: dict[str, str]
    consent: dict[str, str] | None
    # CONTRACT §14: the ad connection whose token it uses instead of `credentials` (the
    # merchant API then fills `credentials` from it).
    connection_id: str | None = None


def destination_request(body: Any) -> DestinationRequest:
    """The request checked whole: a refusal lists every problem it found (those of the
    credentials, target and consent only once the platform and kind they depend on are
    known)."""
    if not isinstance(body, dict):
        raise invalid("body", "must be a JSON object")
    problems = Problems()
    platform = problems.read(_one_of, body, "platform", PLATFORMS)
    kind = problems.read(_one_of, body, "kind", KINDS)
    segment = campaign_id = None
    if kind == "audience":
        segment = problems.read(segment_of, body.get("segment"))
        campaign_id = problems.read(campaign_id_of, body.get("campaignId"))
    elif kind is not None:
        for field in ("segment", "campaignId"):
            if body.get(field) is not None:
                problems.add(field, "is for audience destinations only")
    credentials = target = consent = None
    connection_id = problems.read(connection_of, body)
    if platform is not None:
        if connection_id is None:
            credentials = problems.read(credentials_of, platform, body.get("credentials"))
        else:
            credentials = {}  # the merchant API makes them from the connection
        if kind is not None:
            target = problems.read(target_of, platform, kind, body.get("target"))
        consent = problems.read(consent_of, platform, body.get("consent"))
    problems.check()
    assert platform and kind and credentials is not None and target is not None  # checked
    return DestinationRequest(
        platform=platform,
        kind=kind,
        segment=segment,
        campaign_id=campaign_id,
        credentials=credentials,
        target=target,
        consent=consent,
        connection_id=connection_id,
    )


def connection_of(body: dict[str, Any]) -> str | None:
    """`connection` (CONTRACT §14), which stands instead of `credentials`."""
    value = body.get("connection")
    if value is None:
        return None
    if body.get("credentials") is not None:
        raise invalid("connection", "stands instead of credentials: give one of the two")
    if not isinstance(value, str) or not value.strip() or len(value) > 36:
        raise invalid("connection", "must be the id of one of this profile's ad connections")
    return value


def _time(value: Any) -> str | None:
    return value.isoformat() if value is not None else None


def destination_json(destination: Destination) -> dict[str, Any]:
    """CONTRACT §11's Destination: never the credentials."""
    audience = destination.kind == "audience"
    return {
        "id": destination.id,
        "platform": destination.platform,
        "kind": destination.kind,
        "segment": destination.segment,
        "campaignId": destination.campaign_id,
        "target": dict(destination.target or {}),
        "consent": dict(destination.consent) if destination.consent else None,
        "status": destination.status,
        "lastSyncAt": _time(destination.last_sync_at),
        "lastError": destination.last_error,
        "members": destination.members if audience else None,
        "sent": {
            "added": destination.sent_added,
            "removed": destination.sent_removed,
            "events": destination.sent_events,
            "rejected": destination.sent_rejected,
        },
        "lastReport": last_report(destination),
    }


def last_report(destination: Destination) -> dict[str, Any] | None:
    """The platform's last answer, and beside it what the platforms said they matched
    (CONTRACT §15, `match_report`): `google` (Google's verdicts on the requests sent),
    `meta` (Meta's estimate of the audience's size), each when known."""
    report = dict(destination.last_report) if destination.last_report else {}
    matched = destination.match_report or {}
    for platform in ("google", "meta"):
        if isinstance(matched.get(platform), dict):
            report[platform] = matched[platform]
    return report or None


def run_json(run: DestinationRun) -> dict[str, Any]:
    return {
        "id": str(run.id),
        "startedAt": _time(run.started_at),
        "finishedAt": _time(run.finished_at),
        "trigger": run.trigger,
        "outcome": run.outcome,
        "added": run.added,
        "removed": run.removed,
        "events": run.events,
        "rejected": run.rejected,
        "error": run.error,
    }
