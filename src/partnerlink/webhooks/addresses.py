"""Where a webhook may go: http(s) only, and, unless PARTNERLINK_WEBHOOK_ALLOW_PRIVATE,
never to a loopback, private, link-local or otherwise non-public address. Checked at
registration and again before every delivery (a name may resolve elsewhere later)."""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

from partnerlink.problems import ValidationFailed

MAX_URL_CHARS = 2000


def _refused(reason: str) -> ValidationFailed:
    return ValidationFailed(
        f"webhook URL {reason}",
        code="invalid_field",
        errors=[{"field": "webhookUrl", "message": reason}],
    )


def checked_webhook_url(raw: str, *, allow_private: bool) -> str:
    """The URL as registered, or 400 invalid_field saying why not."""
    url = raw.strip()
    if not url or len(url) > MAX_URL_CHARS:
        raise _refused(f"must be an http or https URL of at most {MAX_URL_CHARS} characters")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise _refused(
            "must be an http or https URL with a host, e.g. https://pos.example.com/hooks"
        )
    if parts.username or parts.password:
        raise _refused("must not carry a user name or password")
    problem = non_public_address(parts.hostname, allow_private=allow_private)
    if problem:
        raise _refused(problem)
    return url


def non_public_address(host: str, *, allow_private: bool) -> str | None:
    """Why a host may not receive webhooks, or None when it may."""
    if allow_private:
        return None
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError):
        return f"host {host!r} does not resolve"
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]).split("%")[0])
        if not address.is_global or address.is_multicast:
            return (
                f"resolves to {address}, a loopback, private or link-local address"
                " (set PARTNERLINK_WEBHOOK_ALLOW_PRIVATE=true for tests and one-box trials)"
            )
    return None
