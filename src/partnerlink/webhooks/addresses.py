"""Where a webhook may go: http(s) only, and, unless PARTNERLINK_WEBHOOK_ALLOW_PRIVATE,
never to a loopback, private, link-local or otherwise non-public address.

Checked at registration, and again at every delivery by the connection itself
(`PublicAddressesOnly`): the host is resolved once, every address it resolves to is
checked, and the connection goes to one of those very addresses. A name that passed
the check cannot resolve elsewhere a moment later for the connection (DNS rebinding).
An IPv6 address that carries an IPv4 one (IPv4-mapped, IPv4-translated, IPv4-compatible,
NAT64, 6to4, Teredo) is judged by that IPv4 too: a gateway would take the connection there.
The deprecated site-local `fec0::/10` (RFC 3879) is private, though Python's ipaddress
calls it global.

The same backend bounds a whole attempt (CONTRACT.md §12: connect to the receiver's
last byte): every read and write waits at most until the attempt's deadline, and at
the deadline the socket is shut down whatever it is doing, so a receiver trickling its
answer (or a TLS handshake) one byte at a time is cut off.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import ssl
import threading
import time
import typing
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpcore

from partnerlink.problems import ValidationFailed

MAX_URL_CHARS = 2000

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# Prefixes whose last 32 bits are an IPv4 address a gateway forwards to: NAT64's
# well-known prefix (RFC 6052) and its local-use one (RFC 8215), the deprecated
# IPv4-compatible form ::a.b.c.d (RFC 4291) and SIIT's IPv4-translated ::ffff:0:a.b.c.d
# (RFC 2765's ::ffff:0:0:0/96, not the IPv4-mapped ::ffff:0:0/96), which Python's
# ipaddress does not decode (it calls `::ffff:0:7f00:1` global).
_LAST_32_BITS_IPV4 = (
    ipaddress.IPv6Network("64:ff9b::/96"),
    ipaddress.IPv6Network("64:ff9b:1::/48"),
    ipaddress.IPv6Network("::/96"),
    ipaddress.IPv6Network("::ffff:0:0:0/96"),
)


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
        if not is_public(address):
            carried = "".join(f" (which carries {ipv4})" for ipv4 in embedded_ipv4(address))
            return [], (
                f"resolves to {address}{carried}, a loopback, private or link-local address"
                " (set PARTNERLINK_WEBHOOK_ALLOW_PRIVATE=true for tests and one-box trials)"
            )
        if address not in addresses:
            addresses.append(address)
    if not addresses:
        return [], f"host {host!r} does not resolve"
    return addresses, None


def embedded_ipv4(address: IPAddress) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address carries (none for a plain one)."""
    if isinstance(address, ipaddress.IPv4Address):
        return []
    carried = [address.ipv4_mapped, address.sixtofour, *(address.teredo or ())]
    if any(address in prefix for prefix in _LAST_32_BITS_IPV4):
        carried.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    return [ipv4 for ipv4 in carried if ipv4 is not None]


def is_public(address: IPAddress) -> bool:
    """Global unicast, and so is every IPv4 address it embeds."""
    if not address.is_global or address.is_multicast:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.is_site_local:
        return False
    return all(ipv4.is_global and not ipv4.is_multicast for ipv4 in embedded_ipv4(address))


class NonPublicAddress(httpcore.ConnectError):
    """A delivery refused before any connection: the host is not a public address."""


CUT_OFF = "the attempt's time is up"


@contextlib.contextmanager
def _mapped(timeout_error: type[Exception], other_error: type[Exception]) -> Iterator[None]:
    """Socket errors as httpcore's, as its own streams raise them."""
    try:
        yield
    except TimeoutError as error:  # socket.timeout
        raise timeout_error(str(error) or CUT_OFF) from error
    except OSError as error:  # ssl.SSLError included
        raise other_error(str(error) or type(error).__name__) from error


class AttemptStream(httpcore.NetworkStream):
    """One delivery's connection, plain or TLS, that never outlives the attempt's deadline
    (a `time.monotonic()` value): each read and write waits at most until then, and a timer
    shuts the socket down at the deadline, which wakes whatever is blocked on it (a TLS
    handshake or record trickled a byte at a time waits per byte, not per operation)."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self._sock = sock
        self._deadline = deadline
        self._lock = threading.Lock()  # the timer never touches a socket being closed
        self._closed = False
        self._timer = threading.Timer(max(0.0, deadline - time.monotonic()), self._cut_off)
        self._timer.daemon = True
        self._timer.start()

    def _left(self, timeout: float | None, error: type[Exception]) -> float:
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise error(CUT_OFF)
        return left if timeout is None else min(timeout, left)

    def _cut_off(self) -> None:
        with self._lock:
            if not self._closed:
                with contextlib.suppress(OSError):  # the socket's own shutdown, even under TLS
                    socket.socket.shutdown(self._sock, socket.SHUT_RDWR)

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        with _mapped(httpcore.ReadTimeout, httpcore.ReadError):
            self._sock.settimeout(self._left(timeout, httpcore.ReadTimeout))
            return self._sock.recv(max_bytes)

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        with _mapped(httpcore.WriteTimeout, httpcore.WriteError):
            while buffer:
                self._sock.settimeout(self._left(timeout, httpcore.WriteTimeout))
                buffer = buffer[self._sock.send(buffer) :]

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        try:
            with _mapped(httpcore.ConnectTimeout, httpcore.ConnectError):
                with self._lock:  # the timer shuts down the TLS socket from now on
                    if self._closed:
                        raise httpcore.ConnectError(CUT_OFF)
                    self._sock = ssl_context.wrap_socket(
                        self._sock, server_hostname=server_hostname, do_handshake_on_connect=False
                    )
                self._sock.settimeout(self._left(timeout, httpcore.ConnectTimeout))
                typing.cast(ssl.SSLSocket, self._sock).do_handshake()
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._timer.cancel()
            self._sock.close()

    def get_extra_info(self, info: str) -> typing.Any:
        if info == "ssl_object" and isinstance(self._sock, ssl.SSLSocket):
            return self._sock._sslobj  # type: ignore[attr-defined]  # as httpcore's own stream
        if info == "client_addr":
            return self._sock.getsockname()
        if info == "server_addr":
            return self._sock.getpeername()
        if info == "socket":
            return self._sock
        return None


class PublicAddressesOnly(httpcore.SyncBackend):
    """httpcore's network backend for one webhook delivery: TCP connections only to
    addresses checked in the same resolution (TLS still verifies the URL's own name,
    which httpcore passes to the handshake separately), none of them open past the
    attempt's deadline (a `time.monotonic()` value)."""

    def __init__(self, *, allow_private: bool, deadline: float):
        self._allow_private = allow_private
        self._deadline = deadline

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        if self._allow_private:
            addresses: list[str] = [host]
        else:
            checked, problem = public_addresses(host, port)
            if problem:
                raise NonPublicAddress(problem)
            addresses = [str(address) for address in checked]
        for number, address in enumerate(addresses, start=1):  # the first that answers
            left = self._deadline - time.monotonic()
            if left <= 0:
                raise httpcore.ConnectTimeout(CUT_OFF)
            try:
                connected = super().connect_tcp(
                    address, port, min(timeout or left, left), local_address, socket_options
                )
            except httpcore.ConnectError:
                if number == len(addresses):
                    raise
                continue
            return AttemptStream(connected.get_extra_info("socket"), self._deadline)
        raise NonPublicAddress(f"host {host!r} does not resolve")  # no address at all
