"""The audiences list and `top`'s exports over the largest amounts (CONTRACT §12, added
2026-11-29): orders at the largest amount an order may carry, and spends beyond a 64-bit
integer (orders stored before amounts were bounded), rank exactly, never a 5xx."""

from __future__ import annotations

import csv
import io

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from partnerlink.audiences import one_pass
from partnerlink.audiences.service import audience_scope, digest_key
from partnerlink.kit.digests import sha256_hex
from tests.audiences.big_spenders import big_spenders, post_ceiling_orders
from tests.audiences.helpers import add_customer, add_order, audience_sizes
from tests.conftest import ON_POSTGRES
from tests.factories import ConnectedStoreFixture


def _top_emails(
    client: TestClient, shop: ConnectedStoreFixture, owner: dict[str, str]
) -> dict[str, list[str]]:
    """The hashed emails of `top`'s export, in each format."""
    exported = {}
    for fmt, column in (("meta", "email"), ("google", "Email")):
        answer = client.get(
            f"/merchant/api/profiles/{shop.profile.id}/audiences/top/export",
            params={"format": fmt},
            headers=owner,
        )
        assert answer.status_code == 200, answer.text
        exported[fmt] = [row[column] for row in csv.DictReader(io.StringIO(answer.text))]
    return exported


def test_orders_at_the_ceiling_leave_the_list_and_top_working(
    client: TestClient, session: Session, shop: ConnectedStoreFixture, owner: dict[str, str]
) -> None:
    post_ceiling_orders(client, shop, email="max@example.com")
    for number in range(4):
        buyer = add_customer(session, shop.store, email=f"b{number}@example.com")
        add_order(session, shop.store, buyer, days_ago=1, price=100 + number)
    sizes = audience_sizes(client, shop.profile.id, owner)
    assert sizes["buyers"][0] == 5
    assert sizes["top"] == (1, 1, 1)  # the customer of the orders, with the order's phone
    expected = [sha256_hex("max@example.com")]
    assert _top_emails(client, shop, owner) == {"meta": expected, "google": expected}


def test_spends_beyond_a_bigint_rank_exactly(
    client: TestClient, session: Session, shop: ConnectedStoreFixture, owner: dict[str, str]
) -> None:
    spenders = big_spenders(session, shop)
    assert spenders.larger_total > 2**63
    sizes = audience_sizes(client, shop.profile.id, owner)
    assert sizes["buyers"][0] == 5
    assert sizes["top"] == (1, 1, 1)  # `larger`, with a phone; `smaller` has none
    expected = [sha256_hex("larger@example.com")]
    assert _top_emails(client, shop, owner) == {"meta": expected, "google": expected}


@pytest.mark.skipif(not ON_POSTGRES, reason="the one pass and its halves are PostgreSQL's")
def test_the_two_halves_rank_spends_beyond_a_bigint_exactly(
    client: TestClient, session: Session, shop: ConnectedStoreFixture
) -> None:
    big_spenders(session, shop)
    key = digest_key(client.app.state.settings.signing_key)  # type: ignore[attr-defined]
    scope = audience_scope(session, shop.profile.id, key)
    whole = one_pass.segment_sizes(session.connection(), scope, split_from=None)
    halves = one_pass.segment_sizes(session.connection(), scope, split_from=0)
    assert whole == halves
    assert whole.sizes["top"] == (1, 1, 1)
