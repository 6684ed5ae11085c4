"""A webhook's connection goes only to an address checked in the same resolution.

A DNS server that rebinds (answers a public address to the check, then loopback to
the connection) is stood in for by the resolver the operating system is asked
through, `socket.getaddrinfo`: only the name `rebind.test` is answered by the test,
every other look-up (address literals included) by the real resolver.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator
from ipaddress import ip_address
from typing import Any

import pytest

from partnerlink.problems import ValidationFailed
from partnerlink.webhooks.addresses import NonPublicAddress, checked_webhook_url, public_addresses
from partnerlink.webhooks.tasks import DELIVERY_ERRORS, post_event
from tests.webhooks.receiver import Receiver, start_receiver

PUBLIC = "93.184.215.14"  # a global unicast address; whatever answers there, not our receiver
SECRETS = ("whsec_test",)
EVENT_ID = "evt_1"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = start_receiver()
    yield server
    server.close()


def rebinding_resolver(answers: list[str]) -> tuple[Any, list[str]]:
    """getaddrinfo that answers `rebind.test` with each of `answers` in turn (the last
    one from then on), and every other name as the system does; with the names asked."""
    real = socket.getaddrinfo
    asked: list[str] = []

    def resolve(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host != "rebind.test":
            return real(host, port, *args, **kwargs)
        asked.append(host)
        address = answers[min(len(asked), len(answers)) - 1]
        return [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (address, port))]

    return resolve, asked


def test_a_name_that_rebinds_to_loopback_after_the_check_is_not_reached(
    monkeypatch: pytest.MonkeyPatch, receiver: Receiver
) -> None:
    resolve, asked = rebinding_resolver([PUBLIC, "127.0.0.1"])
    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    port = receiver.server.server_address[1]
    # Whatever the public address does (answers, refuses, times out), loopback is not reached.
    with contextlib.suppress(*DELIVERY_ERRORS):
        post_event(
            f"http://rebind.test:{port}/hooks",
            b"{}",
            SECRETS,
            event_id=EVENT_ID,
            allow_private=False,
            timeout=2,
        )
    assert asked == ["rebind.test"]  # resolved once, by the check that connected
    assert receiver.received == []


def test_a_name_with_one_private_address_among_public_ones_is_refused_without_connecting(
    monkeypatch: pytest.MonkeyPatch, receiver: Receiver
) -> None:
    real = socket.getaddrinfo

    def resolve(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host != "rebind.test":
            return real(host, port, *args, **kwargs)
        return [
            (socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (PUBLIC, port)),
            (socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", ("127.0.0.1", port)),
        ]

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    port = receiver.server.server_address[1]
    with pytest.raises(NonPublicAddress, match=r"127\.0\.0\.1"):
        post_event(
            f"http://rebind.test:{port}/hooks",
            b"{}",
            SECRETS,
            event_id=EVENT_ID,
            allow_private=False,
        )
    assert receiver.received == []
    addresses, problem = public_addresses("rebind.test")
    assert addresses == [] and problem is not None and "loopback" in problem


def test_allowed_private_addresses_are_reached_signed(receiver: Receiver) -> None:
    status = post_event(
        receiver.url, b'{"id":"evt_1"}', SECRETS, event_id=EVENT_ID, allow_private=True
    )
    assert status == 200
    [received] = receiver.received
    assert received.body == b'{"id":"evt_1"}' and received.signature.startswith("t=")
    assert received.content_type == "application/json"


EMBEDDING_NON_PUBLIC_IPV4 = (
    "64:ff9b::a00:1",  # NAT64 of 10.0.0.1
    "64:ff9b::7f00:1",  # NAT64 of 127.0.0.1
    "64:ff9b::a9fe:a9fe",  # NAT64 of 169.254.169.254, the cloud metadata address
    "64:ff9b:1::a00:1",  # local-use NAT64 of 10.0.0.1
    "2002:c0a8:101::1",  # 6to4 of 192.168.1.1
    "2002:7f00:1::1",  # 6to4 of 127.0.0.1
    "::127.0.0.1",  # IPv4-compatible
    "::10.0.0.1",
    "::ffff:10.0.0.1",  # IPv4-mapped
    "::ffff:127.0.0.1",
    "::ffff:0:7f00:1",  # IPv4-translated (SIIT, ::ffff:0:0:0/96) of 127.0.0.1
    "::ffff:0:a9fe:a9fe",
)
EMBEDDING_PUBLIC_IPV4 = (
    "64:ff9b::808:808",
    "2002:808:808::1",
    "::ffff:8.8.8.8",
    "::ffff:0:808:808",
)


@pytest.mark.parametrize("address", EMBEDDING_NON_PUBLIC_IPV4)
def test_an_ipv6_address_carrying_a_non_public_ipv4_is_refused_like_it(address: str) -> None:
    addresses, problem = public_addresses(address)
    assert addresses == [] and problem is not None and str(ip_address(address)) in problem
    with pytest.raises(ValidationFailed) as refused:
        checked_webhook_url(f"https://[{address}]/hooks", allow_private=False)
    assert refused.value.code == "invalid_field"


@pytest.mark.parametrize("address", ["fec0::1", "fec0::808:808", "feff:ffff::1"])
def test_a_deprecated_site_local_address_is_refused_as_private(address: str) -> None:
    """fec0::/10 (RFC 3879) was the IPv6 private range; Python still calls it global."""
    addresses, problem = public_addresses(address)
    assert addresses == [] and problem is not None and "private" in problem
    with pytest.raises(ValidationFailed) as refused:
        checked_webhook_url(f"https://[{address}]/hooks", allow_private=False)
    assert refused.value.code == "invalid_field"


@pytest.mark.parametrize("address", EMBEDDING_PUBLIC_IPV4)
def test_an_ipv6_address_carrying_a_public_ipv4_is_allowed(address: str) -> None:
    addresses, problem = public_addresses(address)
    assert problem is None and [str(a) for a in addresses] == [str(ip_address(address))]
    assert checked_webhook_url(f"https://[{address}]/hooks", allow_private=False)


def test_a_name_resolving_to_a_nat64_private_address_is_not_connected_to(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = socket.getaddrinfo
    connected: list[Any] = []

    def resolve(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host != "rebind.test":
            return real(host, port, *args, **kwargs)
        return [
            (
                socket.AF_INET6,
                socket.SOCK_STREAM,
                socket.IPPROTO_TCP,
                "",
                ("64:ff9b::a00:1", port, 0, 0),
            )
        ]

    def connect(address: Any, *args: Any, **kwargs: Any) -> Any:
        connected.append(address)
        raise OSError("not in this test")

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    monkeypatch.setattr(socket, "create_connection", connect)
    with pytest.raises(NonPublicAddress, match="64:ff9b::a00:1"):
        post_event(
            "https://rebind.test/hooks", b"{}", SECRETS, event_id=EVENT_ID, allow_private=False
        )
    assert connected == []
