"""Hosts on one machine: Linux network namespaces, each with its own address, for the
multi-host test. The services of the root namespace (PostgreSQL, Redis, the S3
server) are reached at SERVICES_ADDRESS through TCP forwarders, since PostgreSQL
and Redis listen on 127.0.0.1 only."""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import socketserver
import subprocess
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

# An address of the root namespace that every host reaches through its own veth pair.
SERVICES_ADDRESS = "10.231.0.1"
# Every set of hosts uses the same addresses: two test files on two xdist workers take
# turns (an `ip addr add` of an address already there fails).
LOCK_FILE = "/tmp/partnerlink-test-netns.lock"


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=30)


@dataclass
class Host:
    name: str  # the namespace
    address: str

    def command(self, *args: str) -> list[str]:
        """A command line run inside this host."""
        return ["ip", "netns", "exec", self.name, *args]


def namespaces_refused() -> str | None:
    """Why network namespaces cannot be made here, or None when they can."""
    probe = f"plk-probe-{uuid.uuid4().hex[:6]}"
    try:
        _ip("netns", "add", probe)
    except (OSError, subprocess.CalledProcessError) as error:
        detail = getattr(error, "stderr", b"") or b""
        return f"the kernel or the user refuses network namespaces: {error} {detail!r}"
    _ip("netns", "del", probe)
    return None


@contextlib.contextmanager
def hosts(count: int) -> Iterator[list[Host]]:
    """`count` hosts at 10.231.<n>.2, each linked to the root namespace (10.231.<n>.1)."""
    if reason := namespaces_refused():
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    with open(LOCK_FILE, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        with _hosts(count) as made:
            yield made


@contextlib.contextmanager
def _hosts(count: int) -> Iterator[list[Host]]:
    tag = uuid.uuid4().hex[:5]
    made: list[Host] = []
    _ip("addr", "add", f"{SERVICES_ADDRESS}/32", "dev", "lo")
    try:
        for n in range(1, count + 1):
            host = Host(f"plk-{tag}-{n}", f"10.231.{n}.2")
            outside, inside = f"vp{tag}{n}", f"vh{tag}{n}"
            _ip("netns", "add", host.name)
            made.append(host)
            _ip("link", "add", outside, "type", "veth", "peer", "name", inside)
            _ip("link", "set", inside, "netns", host.name)
            _ip("addr", "add", f"10.231.{n}.1/24", "dev", outside)
            _ip("link", "set", outside, "up")
            for args in (
                ("link", "set", "lo", "up"),
                ("addr", "add", f"{host.address}/24", "dev", inside),
                ("link", "set", inside, "up"),
                ("route", "add", "default", "via", f"10.231.{n}.1"),
            ):
                _ip("netns", "exec", host.name, "ip", *args)
        yield made
    finally:
        for host in made:
            # Deleting the namespace deletes its end of the veth pair, and with it the other.
            subprocess.run(["ip", "netns", "del", host.name], check=False, capture_output=True)
        subprocess.run(
            ["ip", "addr", "del", f"{SERVICES_ADDRESS}/32", "dev", "lo"],
            check=False,
            capture_output=True,
        )


class _Pipe(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        server: Forwarder = self.server  # type: ignore[assignment]
        upstream = socket.create_connection(server.target)
        back = threading.Thread(target=_pump, args=(upstream, self.request), daemon=True)
        back.start()
        _pump(self.request, upstream)
        back.join()
        upstream.close()


def _pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)


class Forwarder(socketserver.ThreadingTCPServer):
    """Accepts on (address, a free port) and relays each connection to `target`."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: str, target: tuple[str, int]) -> None:
        super().__init__((address, 0), _Pipe)
        self.target = target
        self.port = int(self.server_address[1])
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.shutdown()
        self.server_close()
