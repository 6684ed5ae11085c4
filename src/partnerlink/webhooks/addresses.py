"""Where a webhook may go: http(s) only, and, unless PARTNERLINK_WEBHOOK_ALLOW_PRIVATE,
never to a loopback, private, link-local or otherwise non-public address.

Checked at registration, and again at every delivery by the connection itself
(`PublicAddressesOnly`): the host is resolved once, every address it resolves to is
checked, and the connection goes to one of those very addresses. A name that passed
the check cannot resolve elsewhere a moment later for the connection (DNS rebinding).
"""

from __future__ import annotations

import ipaddress
import socket
import typing
from urllib.parse import urlsplit

import httpcore

from partnerlink.problems import ValidationFailed

MAX_URL_CHARS = 2000

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


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
    if not allow_private:
        _, problem = public_addresses(parts.hostname)
        if problem:
            raise _refused(problem)
    return url


def public_addresses(host: str, port: int | None = None) -> tuple[list[IPAddress], str | None]:
    """The addresses `host` resolves to, or why it may not receive webhooks. One
    non-public address refuses the whole name: a receiver has no reason to publish one."""
    try:
        infos = socket.getaddrinfo(host, port, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError):
        return [], f"host {host!r} does not resolve"
    addresses: list[IPAddress] = []
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]).split("%")[0])
        if not address.is_global or address.is_multicast:
            return [], (
                f"resolves to {address}, a loopback, private or link-local address"
                " (set PARTNERLINK_WEBHOOK_ALLOW_PRIVATE=true for tests and one-box trials)"
            )
        if address not in addresses:
            addresses.append(address)
    if not addresses:
        return [], f"host {host!r} does not resolve"
    return addresses, None


class NonPublicAddress(httpcore.ConnectError):
    """A delivery refused before any connection: the host is not a public address."""


class PublicAddressesOnly(httpcore.SyncBackend):
    """httpcore's network backend for webhook deliveries: TCP connections only to
    addresses checked in the same resolution (TLS still verifies the URL's own name,
    which httpcore passes to the handshake separately)."""

    def __init__(self, *, allow_private: bool):
        self._allow_private = allow_private

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        if self._allow_private:
            return super().connect_tcp(host, port, timeout, local_address, socket_options)
        addresses, problem = public_addresses(host, port)
        if problem:
            raise NonPublicAddress(problem)
        for address in addresses[:-1]:  # each checked above; the first that answers
            try:
                return super().connect_tcp(
                    str(address), port, timeout, local_address, socket_options
                )
            except httpcore.ConnectError:
                continue
        return super().connect_tcp(str(addresses[-1]), port, timeout, local_address, socket_options)
