"""The operator command line of CONTRACT.md §5, against the live server's database."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.blackbox.box import Box, Partner, assert_problem, unique
from tests.blackbox.conftest import Cast


def test_partners_create_prints_exact_keys(box: Box) -> None:
    slug = unique("cli-pos")
    out = box.cli_json(
        "partners", "create", "--name", "CLI POS", "--pos-type", slug, "--ereceipt", cold=True
    )
    assert set(out) == {"id", "name", "posType", "clientId", "clientSecret", "ereceipt"}
    assert (out["name"], out["posType"], out["ereceipt"]) == ("CLI POS", slug, True)
    assert out["clientId"] and out["clientSecret"] and out["clientId"] != out["clientSecret"]
    created = box.http.post(
        "/v1/auth/integration",
        params={"client_id": out["clientId"], "client_secret": out["clientSecret"]},
    )
    assert created.status_code == 200


def test_partners_list_prints_exact_keys_and_never_a_secret(box: Box, cast: Cast) -> None:
    done = box.server.cold_cli("partners", "list", "--json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert isinstance(rows, list)
    for row in rows:
        assert set(row) == {"id", "name", "posType", "clientId", "ereceipt", "active"}
    by_client = {row["clientId"]: row for row in rows}
    plain = by_client[cast.plain.client_id]
    assert plain == {
        "id": cast.plain.id,
        "name": cast.plain.name,
        "posType": cast.plain.pos_type,
        "clientId": cast.plain.client_id,
        "ereceipt": False,
        "active": True,
    }
    assert by_client[cast.ereceipt.client_id]["ereceipt"] is True
    for partner in (cast.plain, cast.plain2, cast.ereceipt):
        assert partner.client_secret not in done.stdout


def test_rotate_secret_prints_new_secret_and_old_one_stops(box: Box) -> None:
    partner: Partner = box.new_partner()
    out = box.cli_json("partners", "rotate-secret", partner.client_id, cold=True)
    assert set(out) == {"clientId", "clientSecret"}
    assert out["clientId"] == partner.client_id
    assert out["clientSecret"] != partner.client_secret
    old = box.http.post("/v1/auth/integration", params=partner.creds)
    assert_problem(old, 403, "invalid_credentials", secrets=(partner.client_secret,))
    new = box.http.post(
        "/v1/auth/integration",
        params={"client_id": partner.client_id, "client_secret": out["clientSecret"]},
    )
    assert new.status_code == 200


def test_merchants_create_prints_exact_keys(box: Box) -> None:
    email = f"{unique('cli')}@example.com"
    out = box.cli_json(
        "merchants", "create", "--email", email, "--password", "long password 1", cold=True
    )
    assert set(out) == {"id", "email"}
    assert out["email"] == email
    assert box.sign_in(email, "long password 1")


def test_duplicate_pos_type_is_refused(box: Box, cast: Cast) -> None:
    done = box.server.cold_cli(
        "partners", "create", "--name", "Copy", "--pos-type", cast.plain.pos_type, "--json"
    )
    assert done.returncode != 0
    assert "Traceback" not in done.stderr


def test_rotate_secret_of_unknown_client_is_refused(box: Box) -> None:
    done = box.server.cold_cli("partners", "rotate-secret", unique("nobody"), "--json")
    assert done.returncode != 0
    assert "Traceback" not in done.stderr


def _objects(value: Any) -> Iterator[dict[str, Any]]:
    if isinstance(value, dict):
        yield value
        for item in value.values():
            yield from _objects(item)
    elif isinstance(value, list):
        for item in value:
            yield from _objects(item)


def test_demo_prints_json_whose_credentials_work(box: Box) -> None:
    out = box.cli_json("demo", cold=True)
    assert isinstance(out, dict)
    partners = [o for o in _objects(out) if {"clientId", "clientSecret"} <= set(o)]
    assert partners, out
    partner = partners[0]
    r = box.http.post(
        "/v1/auth/integration",
        params={"client_id": partner["clientId"], "client_secret": partner["clientSecret"]},
    )
    assert r.status_code == 200
    merchants = [o for o in _objects(out) if {"email", "password"} <= set(o)]
    assert merchants, out
    assert box.sign_in(merchants[0]["email"], merchants[0]["password"])
    again = box.cli_json("demo", cold=True)
    assert isinstance(again, dict)


@pytest.mark.parametrize("limit", ["1"])
def test_sms_list_prints_a_json_list(box: Box, limit: str) -> None:
    out = box.cli_json("sms", "list", "--limit", limit, cold=True)
    assert isinstance(out, list) and len(out) <= 1
