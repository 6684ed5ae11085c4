"""`partnerlink partners create|list|rotate-secret` and `partnerlink merchants create`."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from partnerlink.partners.models import Partner
from partnerlink.partners.service import authenticate_partner
from partnerlink.problems import InvalidCredentials
from tests.cli.conftest import RunCli

CliJson = Callable[..., Any]


def test_partners_create_prints_the_credentials_once(cli_json: CliJson, session: Session) -> None:
    out = cli_json(
        "partners", "create", "--name", "Acme POS", "--pos-type", "acme-pos", "--ereceipt",
        "--frame-origin", "https://pos.acme.test/",
    )  # fmt: skip

    assert set(out) == {"id", "name", "posType", "clientId", "clientSecret", "ereceipt"}
    assert (out["name"], out["posType"], out["ereceipt"]) == ("Acme POS", "acme-pos", True)
    assert out["clientSecret"].startswith("plk_cs_")
    partner = authenticate_partner(session, out["clientId"], out["clientSecret"])
    assert partner.id == out["id"]
    assert partner.frame_origins == ["https://pos.acme.test"]
    assert out["clientSecret"] not in (partner.client_secret_hash or "")


def test_partners_create_without_ereceipt_flag_is_off(cli_json: CliJson) -> None:
    out = cli_json("partners", "create", "--name", "Plain", "--pos-type", "plain-pos")

    assert out["ereceipt"] is False


def test_partners_create_refuses_a_taken_pos_type(
    cli: RunCli, cli_json: CliJson, session: Session
) -> None:
    cli_json("partners", "create", "--name", "Acme POS", "--pos-type", "acme-pos")

    again = cli("partners", "create", "--name", "Other", "--pos-type", "acme-pos", "--json")

    assert again.returncode == 1
    assert json.loads(again.stdout)["code"] == "pos_type_taken"
    assert session.query(Partner).count() == 1


@pytest.mark.parametrize("pos_type", ["Acme POS", "-acme", ""])
def test_partners_create_refuses_a_bad_pos_type(cli: RunCli, pos_type: str) -> None:
    done = cli("partners", "create", "--name", "Acme", "--pos-type", pos_type, "--json")

    assert done.returncode == 1
    assert "Traceback" not in done.stderr


def test_partners_list_shows_partners_without_secrets(cli_json: CliJson) -> None:
    first = cli_json("partners", "create", "--name", "Acme POS", "--pos-type", "acme-pos")
    second = cli_json(
        "partners", "create", "--name", "Booker", "--pos-type", "booker", "--ereceipt"
    )

    listed = cli_json("partners", "list")

    assert listed == [
        {
            "id": first["id"],
            "name": "Acme POS",
            "posType": "acme-pos",
            "clientId": first["clientId"],
            "ereceipt": False,
            "active": True,
        },
        {
            "id": second["id"],
            "name": "Booker",
            "posType": "booker",
            "clientId": second["clientId"],
            "ereceipt": True,
            "active": True,
        },
    ]


def test_partners_list_as_a_table(cli: RunCli, cli_json: CliJson) -> None:
    created = cli_json("partners", "create", "--name", "Acme POS", "--pos-type", "acme-pos")

    done = cli("partners", "list")

    assert done.returncode == 0
    assert "acme-pos" in done.stdout
    assert created["clientSecret"] not in done.stdout


def test_rotate_secret_replaces_the_old_one(cli_json: CliJson, session: Session) -> None:
    created = cli_json("partners", "create", "--name", "Acme POS", "--pos-type", "acme-pos")

    rotated = cli_json("partners", "rotate-secret", created["clientId"])

    assert set(rotated) == {"clientId", "clientSecret"}
    assert rotated["clientId"] == created["clientId"]
    assert rotated["clientSecret"] != created["clientSecret"]
    assert authenticate_partner(session, created["clientId"], rotated["clientSecret"])
    with pytest.raises(InvalidCredentials):
        authenticate_partner(session, created["clientId"], created["clientSecret"])


def test_rotate_secret_of_an_unknown_client_fails_cleanly(cli: RunCli) -> None:
    done = cli("partners", "rotate-secret", "plk_ci_nope", "--json")

    assert done.returncode == 1
    assert json.loads(done.stdout) == {
        "error": "no partner with client id plk_ci_nope",
        "code": "unknown_client",
    }
    assert "Traceback" not in done.stderr


def test_merchants_create_makes_an_account_that_can_sign_in(
    cli_json: CliJson, client: TestClient
) -> None:
    out = cli_json(
        "merchants", "create", "--email", "Chef@Example.com", "--password", "long enough pw"
    )

    assert set(out) == {"id", "email"}
    assert out["email"] == "chef@example.com"
    response = client.post(
        "/merchant/api/sessions",
        json={"email": "chef@example.com", "password": "long enough pw"},
    )
    assert response.status_code == 200


@pytest.mark.parametrize(
    ("email", "password", "code"),
    [
        ("not-an-email", "long enough pw", "invalid_field"),
        ("chef@example.com", "short", "invalid_field"),
    ],
)
def test_merchants_create_refuses_bad_input(
    cli: RunCli, email: str, password: str, code: str
) -> None:
    done = cli("merchants", "create", "--email", email, "--password", password, "--json")

    assert done.returncode == 1
    assert json.loads(done.stdout)["code"] == code


def test_merchants_create_refuses_a_taken_email(cli: RunCli, cli_json: CliJson) -> None:
    cli_json("merchants", "create", "--email", "chef@example.com", "--password", "long enough pw")

    again = cli(
        "merchants", "create", "--email", "CHEF@example.com", "--password", "another pw!", "--json"
    )

    assert again.returncode == 1
    assert json.loads(again.stdout)["code"] == "email_taken"
