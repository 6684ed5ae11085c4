"""Endpoint 5 of SPEC.md (pairing-code flow) and pairing codes of CONTRACT.md §4."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.blackbox.box import Box, Merchant, Partner, assert_problem
from tests.blackbox.conftest import Cast


@dataclass
class World:
    partner: Partner
    other_partner: Partner
    merchant: Merchant
    other_merchant: Merchant

    def store(self, box: Box, merchant: Merchant | None = None) -> dict[str, Any]:
        owner = merchant or self.merchant
        return box.new_manual_store(owner, box.new_profile(owner)["id"])


@pytest.fixture(scope="module")
def world(cast: Cast) -> World:
    return World(cast.plain, cast.plain2, cast.merchant, cast.other)


def _redeem(box: Box, body: Any) -> Any:
    return box.http.post("/v1/auth/integration/pair", json=body)


def test_reservation_answers_six_digit_code_expiry_and_pos_type(box: Box, world: World) -> None:
    store = world.store(box)
    reserved = box.reserve_code(world.merchant, store["id"], world.partner.pos_type)
    assert set(reserved) >= {"code", "expiresAt", "posType"}
    assert isinstance(reserved["code"], int) and not isinstance(reserved["code"], bool)
    assert 100000 <= reserved["code"] <= 999999
    assert reserved["posType"] == world.partner.pos_type
    expires = datetime.fromisoformat(reserved["expiresAt"].replace("Z", "+00:00"))
    assert expires.tzinfo is not None
    hold = expires - datetime.now(UTC)
    assert timedelta(hours=71, minutes=58) < hold <= timedelta(hours=72, seconds=5)


def test_reserving_sets_the_store_pos_type(box: Box, world: World) -> None:
    store = world.store(box)
    box.reserve_code(world.merchant, store["id"], world.partner.pos_type)
    assert box.store_view(world.merchant, store["id"])["posType"] == world.partner.pos_type


def test_redeeming_answers_access_token_store_id_and_pos_type(box: Box, world: World) -> None:
    store = world.store(box)
    code = box.reserve_code(world.merchant, store["id"], world.partner.pos_type)["code"]
    r = _redeem(box, {"code": code})
    assert r.status_code == 200, r.text
    body = r.json()
    assert set(body) == {"access_token", "storeId", "posType", "success"}
    assert isinstance(body["access_token"], str) and body["access_token"]
    assert body["storeId"] == store["id"]
    assert body["posType"] == world.partner.pos_type
    assert body["success"] is True
    auth = {"Authorization": f"Bearer {body['access_token']}"}
    assert box.http.get("/v1/stores", headers=auth).json() == {"greenInvoices": False}
    (connection,) = box.connections(world.merchant, store["id"])
    assert connection["method"] == "pairing"
    assert connection["posType"] == world.partner.pos_type
    assert connection["revokedAt"] is None


def test_a_consumed_code_answers_404(box: Box, world: World) -> None:
    store = world.store(box)
    code = box.reserve_code(world.merchant, store["id"], world.partner.pos_type)["code"]
    assert _redeem(box, {"code": code}).status_code == 200
    assert_problem(_redeem(box, {"code": code}), 404, "unknown_code")


def test_a_replaced_code_answers_404_and_the_new_one_works(box: Box, world: World) -> None:
    store = world.store(box)
    old = box.reserve_code(world.merchant, store["id"], world.partner.pos_type)["code"]
    new = box.reserve_code(world.merchant, store["id"], world.partner.pos_type)["code"]
    assert old != new
    assert_problem(_redeem(box, {"code": old}), 404, "unknown_code")
    assert _redeem(box, {"code": new}).status_code == 200


def test_an_unknown_code_answers_404(box: Box, world: World) -> None:
    store = world.store(box)
    code = box.reserve_code(world.merchant, store["id"], world.partner.pos_type)["code"]
    box.reserve_code(world.merchant, store["id"], world.partner.pos_type)
    assert_problem(_redeem(box, {"code": code}), 404, "unknown_code")


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"code": None},
        {"code": "abcdef"},
        {"code": "123456"},
        {"code": 123456.5},
        {"code": ""},
        {"code": [123456]},
        {"code": {"value": 123456}},
        {"code": True},
        {"other": 123456},
        [123456],
        "123456",
        None,
    ],
)
def test_malformed_pairing_body_answers_400(box: Box, body: Any) -> None:
    assert_problem(_redeem(box, body), 400)


def test_pairing_without_body_answers_400(box: Box) -> None:
    assert_problem(box.http.post("/v1/auth/integration/pair"), 400)


def test_refused_malformed_redemption_leaves_the_code_reserved(box: Box, world: World) -> None:
    store = world.store(box)
    code = box.reserve_code(world.merchant, store["id"], world.partner.pos_type)["code"]
    assert_problem(_redeem(box, {"code": str(code) + "x"}), 400)
    assert _redeem(box, {"code": code}).status_code == 200


def test_new_pairing_revokes_the_older_token_of_same_partner(box: Box, world: World) -> None:
    store = world.store(box)
    first = box.connect_by_pairing(world.partner, world.merchant, store_id=store["id"])
    second = box.connect_by_pairing(world.partner, world.merchant, store_id=store["id"])
    assert first.access_token != second.access_token
    assert_problem(
        box.http.get("/v1/stores", headers=first.auth),
        403,
        "invalid_token",
        secrets=(first.access_token,),
    )
    assert box.http.get("/v1/stores", headers=second.auth).status_code == 200
    connections = box.connections(world.merchant, store["id"])
    assert sorted(c["revokedAt"] is None for c in connections) == [False, True]
    assert {c["method"] for c in connections} == {"pairing"}


def test_pos_type_follows_the_partner_connected_last(box: Box, world: World) -> None:
    store = world.store(box)
    first = box.connect_by_pairing(world.partner, world.merchant, store_id=store["id"])
    assert box.store_view(world.merchant, store["id"])["posType"] == world.partner.pos_type
    second = box.connect_by_pairing(world.other_partner, world.merchant, store_id=store["id"])
    assert second.exchange["posType"] == world.other_partner.pos_type
    assert box.store_view(world.merchant, store["id"])["posType"] == world.other_partner.pos_type
    # One live connection per partner: the first partner's connection stays.
    assert box.http.get("/v1/stores", headers=first.auth).status_code == 200
    consent = box.connect_by_consent(world.partner, world.merchant, store_id=store["id"])
    assert box.store_view(world.merchant, store["id"])["posType"] == world.partner.pos_type
    # The consent replaced the first partner's pairing connection on this store.
    assert_problem(box.http.get("/v1/stores", headers=first.auth), 403, "invalid_token")
    assert box.http.get("/v1/stores", headers=consent.auth).status_code == 200
    assert box.http.get("/v1/stores", headers=second.auth).status_code == 200


def test_revoking_a_pairing_connection_stops_its_token(box: Box, world: World) -> None:
    conn = box.connect_by_pairing(world.partner, world.merchant)
    (live,) = box.connections(world.merchant, conn.store_id)
    r = box.http.delete(f"/merchant/api/connections/{live['id']}", headers=world.merchant.auth)
    assert r.status_code == 204
    assert_problem(box.http.get("/v1/stores", headers=conn.auth), 403, "invalid_token")


def test_reserving_for_another_merchants_store_answers_404(box: Box, world: World) -> None:
    foreign = world.store(box, world.other_merchant)
    r = box.http.post(
        f"/merchant/api/stores/{foreign['id']}/pairing-codes",
        json={"posType": world.partner.pos_type},
        headers=world.merchant.auth,
    )
    assert_problem(r, 404)


def test_reserving_for_an_unknown_pos_type_is_refused(box: Box, world: World) -> None:
    store = world.store(box)
    r = box.http.post(
        f"/merchant/api/stores/{store['id']}/pairing-codes",
        json={"posType": "no-such-partner-pos"},
        headers=world.merchant.auth,
    )
    assert 400 <= r.status_code < 500
    assert_problem(r, r.status_code)


@pytest.mark.parametrize("body", [{}, {"posType": None}, {"posType": 12}, []])
def test_reserving_with_malformed_body_answers_400(box: Box, world: World, body: Any) -> None:
    store = world.store(box)
    r = box.http.post(
        f"/merchant/api/stores/{store['id']}/pairing-codes", json=body, headers=world.merchant.auth
    )
    assert_problem(r, 400)


def test_codes_reserved_at_once_are_distinct(box: Box, world: World) -> None:
    codes = set()
    for _ in range(5):
        store = world.store(box)
        codes.add(box.reserve_code(world.merchant, store["id"], world.partner.pos_type)["code"])
    assert len(codes) == 5


def test_codes_for_two_partners_on_one_store_both_redeem(box: Box, world: World) -> None:
    store = world.store(box)
    first = box.reserve_code(world.merchant, store["id"], world.partner.pos_type)["code"]
    second = box.reserve_code(world.merchant, store["id"], world.other_partner.pos_type)["code"]
    assert _redeem(box, {"code": first}).status_code == 200
    assert _redeem(box, {"code": second}).status_code == 200
