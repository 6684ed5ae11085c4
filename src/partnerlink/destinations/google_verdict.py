"""Google's verdict on one request (RetrieveRequestStatusResponse, CONTRACT §15) as the
worker keeps it (verdicts.py), and a kept report in a store owner's words.

Google answers `requestStatus:retrieve` in protobuf JSON: enums by name
(`requestStatus`: PROCESSING, SUCCESS, PARTIAL_SUCCESS, FAILED; `uploadMatchRateRange`:
MATCH_RATE_RANGE_20_TO_30, ...), int64 counts as strings (`"recordCount": "1240"`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Verdict:
    """Google's verdict on one request once it is no longer PROCESSING."""

    status: str  # success | partial_success | failed
    records: int
    match_rate: tuple[int, int] | None
    errors: dict[str, int]
    warnings: dict[str, int]


# -- Google's answer ----------------------------------------------------------------------

_RANGE = re.compile(r"^MATCH_RATE_RANGE_(?:(\d+)_TO_(\d+)|LESS_THAN_(\d+))$")
_STATUSES = {"SUCCESS": "success", "PARTIAL_SUCCESS": "partial_success", "FAILED": "failed"}


def verdict_of(answer: dict[str, Any]) -> Verdict | None:
    """The verdict in a RetrieveRequestStatusResponse (JSON), or None while any
    destination of the request is PROCESSING (or its status is not known yet).
    Google writes int64 counts as strings; enums by name."""
    entries = answer.get("requestStatusPerDestination")
    if not isinstance(entries, list) or not entries:
        return None
    status: str | None = None
    records = 0
    rate: tuple[int, int] | None = None
    errors: dict[str, int] = {}
    warnings: dict[str, int] = {}
    for entry in entries:
        if not isinstance(entry, dict):
            return None
        this = _STATUSES.get(str(entry.get("requestStatus")))
        if this is None:
            return None  # PROCESSING, REQUEST_STATUS_UNKNOWN
        status = this if status in (None, this) else "partial_success"
        for name in ("audienceMembersIngestionStatus", "eventsIngestionStatus"):
            found = entry.get(name)
            if isinstance(found, dict):
                records += count(_first_with(found, "recordCount").get("recordCount"))
                rate = widened(rate, _range(_first_with(found, "uploadMatchRateRange")))
        _add_counts(errors, entry.get("errorInfo"), "errorCounts")
        _add_counts(warnings, entry.get("warningInfo"), "warningCounts")
    assert status is not None
    return Verdict(status, records, rate, errors, warnings)


def _first_with(status: dict[str, Any], key: str) -> dict[str, Any]:
    """The status itself when it holds `key` (events), else its one data-type status
    (`userDataIngestionStatus`, ...) that does."""
    if key in status:
        return status
    for value in status.values():
        if isinstance(value, dict) and key in value:
            return value
    return {}


def count(value: object) -> int:
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return max(value, 0)
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return int(value)
    return 0


def _range(status: dict[str, Any]) -> tuple[int, int] | None:
    match = _RANGE.match(str(status.get("uploadMatchRateRange", "")))
    if not match:
        return None  # unknown, or not eligible (too few records)
    low, high, below = match.groups()
    return (0, int(below)) if below else (int(low), int(high))


def widened(known: tuple[int, int] | None, other: tuple[int, int] | None) -> tuple[int, int] | None:
    if known is None or other is None:
        return known or other
    return min(known[0], other[0]), max(known[1], other[1])


def _add_counts(into: dict[str, int], info: object, key: str) -> None:
    counts = info.get(key) if isinstance(info, dict) else None
    for item in counts if isinstance(counts, list) else []:
        if isinstance(item, dict):
            reason = str(item.get("reason") or "UNSPECIFIED")[:100]
            into[reason] = into.get(reason, 0) + count(item.get("recordCount"))


# -- in a store owner's words (the console) ------------------------------------------------

_REASONS = {
    "PROCESSING_ERROR_REASON_NO_CONSENT": "consent not given",
    "PROCESSING_ERROR_REASON_DENIED_CONSENT": "consent not given",
    "PROCESSING_ERROR_REASON_UNKNOWN_CONSENT": "consent not stated",
    "PROCESSING_ERROR_REASON_EVENT_TOO_OLD": "sale too old",
    "PROCESSING_ERROR_REASON_DUPLICATE_TRANSACTION_ID": "sent before",
    "PROCESSING_ERROR_REASON_INVALID_FORMAT": "not in a form Google reads",
    "PROCESSING_ERROR_REASON_INVALID_EVENT": "not in a form Google reads",
    "PROCESSING_ERROR_REASON_INTERNAL_ERROR": "an error at Google",
    "PROCESSING_ERROR_REASON_DESTINATION_ACCOUNT_ENHANCED_CONVERSIONS_TERMS_NOT_SIGNED": (
        "the Google Ads account has not accepted the customer data terms"
    ),
}


def google_words(report: dict[str, Any] | None) -> str:
    """Google's verdict (match_report["google"], shown as lastReport.google) as the
    console says it: "Google matched 20–30% of the 1,240 people sent." / "Google is still
    processing the 1,240 people sent." / "Google dropped 12 of 1,240: consent not given."
    "" when there is none."""
    if not report:
        return ""
    noun = "sales" if report.get("kind") == "conversions" else "people"
    total = count(report.get("recordCount"))
    processing = count(report.get("processing"))
    gave_up = count(report.get("gaveUp"))
    status = report.get("status")
    if status == "processing":
        return f"Google is still processing the {processing:,} {noun} sent."
    if status == "gave_up" and not total:
        return f"Google had not finished processing the {gave_up:,} {noun} sent after 24 hours."
    errors = [item for item in report.get("errors") or [] if isinstance(item, dict)]
    reasons = "; ".join(
        f"{_REASONS.get(str(item.get('reason')), 'refused')}" for item in errors[:3]
    )
    dropped = sum(count(item.get("recordCount")) for item in errors)
    rate = report.get("matchRateRange")
    if status == "failed":
        sentence = f"Google could not use the {total:,} {noun} sent" + (
            f": {reasons}." if reasons else "."
        )
    else:
        if isinstance(rate, dict):
            low, high = count(rate.get("low")), count(rate.get("high"))
            share = f"less than {high}%" if low == 0 else f"{low}–{high}%"
            sentence = f"Google matched {share} of the {total:,} {noun} sent."
        else:
            sentence = f"Google processed the {total:,} {noun} sent."
        if dropped:
            sentence += f" Google dropped {dropped:,} of {total:,}: {reasons}."
    if processing:
        sentence += f" {processing:,} more still processing."
    if gave_up:
        sentence += f" {gave_up:,} more not processed after 24 hours."
    return sentence
