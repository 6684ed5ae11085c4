"""What every ad-platform client shares: its errors, its HTTP client, its answers' parsing.

A platform call either returns the platform's answer or raises `PlatformError`, whose
`kind` tells the sync engine what to do next (CONTRACT §11):

- `retry`: 429, 5xx, a timeout, a refused connection or an answer that is not the
  platform's JSON. Try again later, at least `retry_after` seconds from now.
- `credentials`: 401 or 403, Meta's OAuth error 190, Google's `invalid_grant`. Stop
  calling until the merchant gives new credentials or asks for a sync.
- `rejected`: a 400 that names the rows it refused (`rejected_rows`); the others count
  as sent.
- `invalid`: any other refusal of the request as a whole (a wrong audience or dataset
  id, a 404): retrying the same request will not help, the merchant must fix the target.

`message` is written for the merchant and never holds a credential: the clients build
it from the status and the platform's error code in our words (`platform_said`); the
platform's own message joins them only when it is one of that platform's known,
credential-free messages. Cutting the credentials out of free text (the exact token)
was not enough: a platform may echo one lower-cased, cut short or re-encoded, and
`lastError` is shown on the page, in the API and in the command line.
"""

from __future__ import annotations

import email.utils
import math
import re
import time
from collections.abc import Iterable, Sequence
from typing import Literal, Self, TypeVar

import httpx

PlatformErrorKind = Literal["retry", "credentials", "rejected", "invalid"]

CONNECT_TIMEOUT_SECONDS = 5.0
REQUEST_TIMEOUT_SECONDS = 30.0
# The longest wait a Retry-After may ask for that we believe: a day.
MAX_RETRY_AFTER_SECONDS = 86_400.0
MESSAGE_LIMIT = 400

T = TypeVar("T")


class PlatformError(Exception):
    def __init__(
        self,
        kind: PlatformErrorKind,
        message: str,
        *,
        retry_after: float | None = None,
        rejected_rows: int = 0,
        status: int | None = None,
        done: int = 0,
        rows: Sequence[int] = (),
    ) -> None:
        super().__init__(message)
        self.kind: PlatformErrorKind = kind
        self.message = message[:MESSAGE_LIMIT]
        self.retry_after = retry_after
        self.rejected_rows = rejected_rows
        self.status = status
        # Rows or events the platform took before this error, in a call of many requests:
        # the caller counts them as sent and sends only the rest again.
        self.done = done
        # Indexes (in the refused request) of the rows a `rejected` answer named.
        self.rows = list(rows)

    def __repr__(self) -> str:
        return f"PlatformError({self.kind!r}, {self.message!r}, status={self.status})"


def platform_client(
    *,
    connect_seconds: float = CONNECT_TIMEOUT_SECONDS,
    request_seconds: float = REQUEST_TIMEOUT_SECONDS,
    transport: httpx.BaseTransport | None = None,
) -> httpx.Client:
    """An HTTP client a hanging platform cannot hold: 5 s to connect, 30 s for each read,
    write and pool wait. No redirects are followed (a token must not travel to another
    host), and no proxy or .netrc from the environment adds credentials of its own."""
    timeout = httpx.Timeout(request_seconds, connect=connect_seconds)
    return httpx.Client(
        timeout=timeout, follow_redirects=False, trust_env=False, transport=transport
    )


class PlatformClient:
    """What Meta's and Google's clients share: the HTTP client they are given (the worker's,
    with its connections kept between syncs) or one of their own, closed with them."""

    def __init__(self, client: httpx.Client | None) -> None:
        self._own_client = client is None
        self.client = client or platform_client()

    def close(self) -> None:
        if self._own_client:
            self.client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def busy_platform(said: str, response: httpx.Response) -> PlatformError:
    """A 429 or 5xx: retried later, never sooner than the platform's Retry-After."""
    return PlatformError(
        "retry",
        f"{said}. PartnerLink will try again.",
        retry_after=retry_after_seconds(response.headers),
        status=response.status_code,
    )


def retry_after_seconds(headers: httpx.Headers, now: float | None = None) -> float | None:
    """Retry-After as seconds (`120`) or as an HTTP date; None when absent or unreadable."""
    value = headers.get("retry-after", "").strip()
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    if math.isnan(seconds):
        return None
    return min(max(seconds, 0.0), MAX_RETRY_AFTER_SECONDS)


def transport_error(platform: str, error: httpx.HTTPError) -> PlatformError:
    """A timeout, a refused connection, a broken answer: always worth another try."""
    if isinstance(error, httpx.TimeoutException):
        what = "did not answer in time"
    elif isinstance(error, httpx.ConnectError):
        what = "could not be reached"
    else:
        what = f"broke off the connection ({type(error).__name__})"
    return PlatformError("retry", f"{platform} {what}; PartnerLink will try again.")


def json_object(response: httpx.Response) -> dict[str, object] | None:
    """The answer's JSON object, or None when the body is not one (a proxy's HTML page)."""
    try:
        payload = response.json()
    except ValueError:
        return None
    return payload if isinstance(payload, dict) else None


def garbage_answer(platform: str, response: httpx.Response) -> PlatformError:
    return PlatformError(
        "retry",
        f"{platform} answered HTTP {response.status_code} with something other than its "
        "usual JSON; PartnerLink will try again.",
        retry_after=retry_after_seconds(response.headers),
        status=response.status_code,
    )


def platform_said(head: str, texts: Iterable[object], known: Sequence[re.Pattern[str]]) -> str:
    """`head` (our words: who answered, the HTTP status, a code checked against the
    platform's known codes), then the first of the platform's `texts` that matches one of
    its `known` messages whole; any other text of the platform stays out."""
    for text in texts:
        words = " ".join(str(text or "").split())
        if words and any(pattern.fullmatch(words) for pattern in known):
            return f"{head}: {words}"[:MESSAGE_LIMIT]
    return head[:MESSAGE_LIMIT]


def known_code(value: object, known: Iterable[str]) -> str | None:
    """A platform's error code (Google's `status`, OAuth's `error`) when it is one of the
    documented ones; None for anything else, which could be any text."""
    return value if isinstance(value, str) and value in known else None


CREDENTIAL_WINDOW = 8


def holds_credential(text: str, credentials: Iterable[str]) -> bool:
    """Whether `text` holds 8 characters in a row of a credential, whatever their case:
    the last check before a message is stored, should a known message ever carry one."""
    folded = text.casefold()
    for credential in credentials:
        value = credential.casefold()
        width = min(CREDENTIAL_WINDOW, len(value))
        if width and any(
            value[start : start + width] in folded for start in range(len(value) - width + 1)
        ):
            return True
    return False


def chunks(items: Sequence[T], size: int) -> Iterable[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
