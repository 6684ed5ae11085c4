"""Meta's refusals in words, and how long Meta asks us to wait (CONTRACT §11, §15).

Kept apart from the client (meta.py): the published error codes, the messages that may be
shown to a merchant, and the throttling header `X-Business-Use-Case-Usage`.
"""

from __future__ import annotations

import json
import re

import httpx

from partnerlink.destinations.platform import (
    MAX_RETRY_AFTER_SECONDS,
    PlatformError,
    platform_said,
    retry_after_seconds,
)

# Meta's published error codes (Graph API "Handling Errors"; Marketing API rate limiting).
_TOKEN_CODES = frozenset({102, 190})  # the token expired, was revoked or is invalid
_PERMISSION_CODES = frozenset({10, *range(200, 300)})  # the token lacks a permission
_RATE_CODES = frozenset({4, 17, 32, 341, 613, *range(80_000, 80_015)})
_TEMPORARY_CODES = frozenset({1, 2})  # "temporary issue due to downtime"
_INVALID_PARAMETER = 100
_NO_SUCH_OBJECT_SUBCODE = 33  # the id does not exist or the token may not see it

# Meta's own messages that may be shown to the merchant: known, credential-free, matched
# whole (platform.platform_said). Meta echoes the token in others ("Malformed access
# token ..."), so any message not listed here is left out.
_DAY = (
    r"(?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day, "
    r"\d\d-(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)-\d\d \d\d:\d\d:\d\d P[SD]T"
)
KNOWN_MESSAGES = tuple(
    re.compile(pattern)
    for pattern in (
        rf"Error validating access token: Session has expired on {_DAY}\. The current time "
        rf"is {_DAY}\.",
        r"Error validating access token: Session has expired",
        r"Error validating access token: The session has been invalidated because the user "
        r"changed their password or Facebook has changed the session for security reasons\.",
        r"Error validating access token: The user has not authorized application \d+\.",
        r"Error validating access token: The session is invalid because the user logged out\.",
        r"Invalid OAuth access token(?: - Cannot parse access token|\.)?",
        r"(?:\(#(?:4|17|32|613)\) )?(?:User|Application|Page) request limit reached",
        r"\(#613\) Calls to this api have exceeded the rate limit\.",
        r"(?:\(#(?:10|200)\) )?(?:Permissions error|Application does not have permission for "
        r"this action)",
        r"Service temporarily unavailable",
        r"An unknown error has occurred\.",
        r"An unexpected error has occurred\. Please retry your request later\.",
        r"Unsupported (?:post|delete) request\. Object with ID '\d+' does not exist, cannot "
        r"be loaded due to missing permissions, or does not support this operation\.?"
        r"(?: Please read the Graph API documentation at https://developers\.facebook\.com/"
        r"docs/graph-api)?",
        r"\(#100\) Invalid parameter",
    )
)

# Meta's business use case rate limits: `X-Business-Use-Case-Usage` is JSON, each
# business id (or ad account) to its use cases: `{"<id>": [{"type": "ads_management",
# "call_count", "total_cputime", "total_time" (percents), "estimated_time_to_regain_access"
# (minutes until calls are no longer throttled)}, ...]}`.
BUSINESS_USAGE_HEADER = "x-business-use-case-usage"
_REGAIN_ACCESS = "estimated_time_to_regain_access"
_MAX_MINUTES = MAX_RETRY_AFTER_SECONDS / 60


def meta_error(
    response: httpx.Response, answer: dict[str, object], *, events: bool
) -> PlatformError:
    """Meta's refusal as a PlatformError: its kind by Meta's published codes, its words
    only Meta's known messages, its wait the longer of Retry-After and the throttling
    header's."""
    status = response.status_code
    error = answer.get("error")
    details: dict[str, object] = error if isinstance(error, dict) else {}
    code = int_or_none(details.get("code"))
    subcode = int_or_none(details.get("error_subcode"))
    said = platform_said(
        f"Meta answered HTTP {status}"
        + (f", error {code}" if code is not None else "")
        + (f"/{subcode}" if subcode is not None else ""),
        (details.get("error_user_msg"), details.get("message")),
        KNOWN_MESSAGES,
    )
    wait = throttled_seconds(response.headers)
    if code in _TOKEN_CODES or (code is None and status == 401):
        return PlatformError(
            "credentials",
            f"{said}. The access token is no longer valid: create a new one (a system "
            "user's token in Meta Business Settings) and save it on this destination.",
            status=status,
        )
    if code in _PERMISSION_CODES or (code is None and status == 403):
        return PlatformError(
            "credentials",
            f"{said}. The access token may not manage this audience or dataset: give "
            "its user the ads_management permission on the ad account, then save it again.",
            status=status,
        )
    if code in _RATE_CODES or code in _TEMPORARY_CODES or status == 429 or status >= 500:
        return PlatformError(
            "retry", f"{said}. PartnerLink will try again.", retry_after=wait, status=status
        )
    if (code == _INVALID_PARAMETER and subcode == _NO_SUCH_OBJECT_SUBCODE) or status == 404:
        return PlatformError(
            "invalid",
            f"{said}. Check the audience or dataset id on this destination.",
            status=status,
        )
    if events and code == _INVALID_PARAMETER:
        return PlatformError("rejected", said, rejected_rows=1, status=status)
    return PlatformError("invalid", said, status=status)


def throttled_seconds(headers: httpx.Headers) -> float | None:
    """How long Meta asks us to wait: the longer of `Retry-After` and the longest
    `estimated_time_to_regain_access` in `X-Business-Use-Case-Usage`; None when neither
    says. A header that is not Meta's JSON is ignored."""
    waits = [
        wait
        for wait in (retry_after_seconds(headers), regain_access_seconds(headers))
        if wait is not None
    ]
    return max(waits, default=None)


def regain_access_seconds(headers: httpx.Headers) -> float | None:
    """The longest `estimated_time_to_regain_access` of `X-Business-Use-Case-Usage`, over
    every business id and use case, in seconds (at most a day); None when the header is
    absent, unreadable or names no wait."""
    text = headers.get(BUSINESS_USAGE_HEADER, "").strip()
    if not text:
        return None
    try:
        usage = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(usage, dict):
        return None
    minutes = [
        _minutes(case.get(_REGAIN_ACCESS))
        for cases in usage.values()
        for case in (cases if isinstance(cases, list) else [cases])
        if isinstance(case, dict)
    ]
    longest = max((m for m in minutes if m is not None), default=None)
    return None if longest is None else longest * 60.0


def _minutes(value: object) -> float | None:
    """A count of minutes (a number, or its digits) at least zero, at most a day's; None
    for anything else."""
    if isinstance(value, str):
        value = int_or_none(value.strip())
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        return None  # (NaN is not >= 0)
    return float(min(value, _MAX_MINUTES))


def int_or_none(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return int(value)
    return None
