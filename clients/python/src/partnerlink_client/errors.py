"""Errors: one class per kind of answer, each carrying CONTRACT §3's problem body."""

from __future__ import annotations

from typing import Any


class PartnerLinkError(Exception):
    """An answer that is not a success: its status and problem body (`code`, `detail`,
    `errors` with one entry per bad field)."""

    def __init__(self, status: int, body: dict[str, Any] | None = None) -> None:
        self.status = status
        self.body = body or {}
        self.code: str = str(self.body.get("code", ""))
        # RFC 6749's errors (the OAuth endpoints) say it in `error_description`.
        self.detail: str = str(self.body.get("detail", self.body.get("error_description", "")))
        self.errors: list[dict[str, Any]] = list(self.body.get("errors") or [])
        super().__init__(f"HTTP {status} {self.code}: {self.detail}".strip())


class BadRequest(PartnerLinkError):
    """400: fix the request; never retried."""


class Unauthorized(PartnerLinkError):
    """401: the OAuth endpoints refused the client's authentication (`invalid_client`)."""


class Forbidden(PartnerLinkError):
    """403: credentials or token refused (after one refresh, when there was one)."""


class NotFound(PartnerLinkError):
    """404: unknown (pairing code, integration token, order); never retried."""


class Gone(PartnerLinkError):
    """410: expired or already used; never retried."""


class RateLimited(PartnerLinkError):
    """429: wait `retry_after` seconds."""

    retry_after: float | None = None


class ServerError(PartnerLinkError):
    """500 (retried with backoff first), or another 5xx."""


class ConnectionFailed(PartnerLinkError):
    """No answer at all (after the retries)."""


_BY_STATUS: dict[int, type[PartnerLinkError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    410: Gone,
    429: RateLimited,
}


def error_for(
    status: int, body: dict[str, Any] | None, retry_after: float | None = None
) -> PartnerLinkError:
    kind = _BY_STATUS.get(status, ServerError if status >= 500 else PartnerLinkError)
    error = kind(status, body)
    if isinstance(error, RateLimited):
        error.retry_after = retry_after
    return error
