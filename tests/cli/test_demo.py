"""`partnerlink demo`: what it sets up works, and running it again keeps working."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import update
from sqlalchemy.orm import Session

from partnerlink.merchant.models import Merchant, Profile
from partnerlink.partners.models import Partner
from partnerlink.security.passwords import hash_password
from partnerlink.stores.models import Store
from tests.cli.conftest import RunCli
from tests.conftest import LiveServer

CliJson = Callable[..., Any]


def test_demo_prints_everything_as_one_json_object(cli_json: CliJson, session: Session) -> None:
    out = cli_json("demo")

    assert {"partner", "merchant", "profile", "store", "pairingCode", "commands"} <= set(out)
    assert set(out["partner"]) == {"id", "name", "posType", "clientId", "clientSecret", "ereceipt"}
    assert out["partner"] | {"id": "", "clientId": "", "clientSecret": ""} == {
        "id": "",
        "name": "Demo POS",
        "posType": "demo-pos",
        "clientId": "",
        "clientSecret": "",
        "ereceipt": True,
    }
    assert {"id", "email", "password"} <= set(out["merchant"])
    assert out["merchant"]["email"] == "demo@partnerlink.test"
    assert out["profile"]["name"] == "Demo Bistro"
    assert out["store"]["manual"] is True
    assert isinstance(out["pairingCode"], int)
    assert 100000 <= out["pairingCode"] <= 999999
    partner = session.query(Partner).one()
    assert partner.frame_origins == ["http://localhost:8080"]
    store = session.get(Store, out["store"]["id"])
    assert store is not None
    assert store.profile_id == out["profile"]["id"]
    assert store.pos_type == "demo-pos"


def test_demo_commands_cover_both_flows(cli_json: CliJson) -> None:
    out = cli_json("demo")

    commands = out["commands"]
    text = "\n".join(c["command"] for c in commands)
    assert [c["flow"] for c in commands] == ["consent", "consent", "consent", "pairing"]
    assert all(c["title"] and c["command"] for c in commands)
    for fragment in [
        # The README walkthrough's names: BASE, CID, CS, IT, AT, RT.
        f"export BASE='{out['publicUrl']}' CID='{out['partner']['clientId']}' "
        f"CS='{out['partner']['clientSecret']}'",
        '-X POST "$BASE/v1/auth/integration?client_id=$CID&client_secret=$CS"',
        "/connect/?client_id=$CID&integration_token=$IT",
        '"$BASE/merchant/api/consents/$IT/approve"',
        "$BASE/v1/auth/integration/token?client_id=$CID&client_secret=$CS&integration_token=$IT",
        "$BASE/v1/auth/token?client_id=$CID&client_secret=$CS&code=$RT&grant_type=refresh_token",
        "$BASE/v1/auth/integration/pair",
        f'{{"code": {out["pairingCode"]}}}',
        '-X PUT "$BASE/v1/stores" -H "Authorization: Bearer $AT"',
    ]:
        assert fragment in text, fragment
    assert "PL_BASE" not in text and "CLIENT_ID" not in text


def test_demo_credentials_work(cli_json: CliJson, client: TestClient) -> None:
    out = cli_json("demo")
    partner = out["partner"]

    integration = client.post(
        "/v1/auth/integration",
        params={"client_id": partner["clientId"], "client_secret": partner["clientSecret"]},
    )
    signed_in = client.post(
        "/merchant/api/sessions",
        json={"email": out["merchant"]["email"], "password": out["merchant"]["password"]},
    )
    paired = client.post("/v1/auth/integration/pair", json={"code": out["pairingCode"]})

    assert integration.status_code == 200
    assert signed_in.status_code == 200
    assert paired.status_code == 200
    assert paired.json()["storeId"] == out["store"]["id"]
    assert paired.json()["posType"] == "demo-pos"
    put = client.put(
        "/v1/stores",
        json={"storeName": "Demo", "storeAddress": "1 Main", "storeCountryCode": "US"},
        headers={"Authorization": f"Bearer {paired.json()['access_token']}"},
    )
    assert put.status_code == 200


def test_demo_run_again_reuses_records_and_keeps_credentials(
    cli_json: CliJson, client: TestClient, session: Session
) -> None:
    first = cli_json("demo")

    second = cli_json("demo")

    for part in ("partner", "merchant", "profile", "store"):
        assert second[part]["id"] == first[part]["id"]
    assert second["partner"]["clientId"] == first["partner"]["clientId"]
    # Variables copied from the first run keep working.
    assert second["partner"]["clientSecret"] == first["partner"]["clientSecret"]
    assert second["merchant"]["password"] == first["merchant"]["password"]
    assert first["renewed"] == second["renewed"] == []
    assert (session.query(Partner).count(), session.query(Merchant).count()) == (1, 1)
    assert (session.query(Profile).count(), session.query(Store).count()) == (1, 1)
    session.rollback()  # hand the one SQLite connection back to the app

    assert _create_token(client, first["partner"]) == 200
    assert _sign_in(client, first["merchant"]["password"]) == 200

    # The new code replaced the old one.
    def redeem(code: int) -> int:
        return client.post("/v1/auth/integration/pair", json={"code": code}).status_code

    if first["pairingCode"] != second["pairingCode"]:
        assert redeem(first["pairingCode"]) == 404
    assert redeem(second["pairingCode"]) == 200


def _create_token(client: TestClient, partner: dict[str, str]) -> int:
    params = {"client_id": partner["clientId"], "client_secret": partner["clientSecret"]}
    return client.post("/v1/auth/integration", params=params).status_code


def _sign_in(client: TestClient, password: str) -> int:
    body = {"email": "demo@partnerlink.test", "password": password}
    return client.post("/merchant/api/sessions", json=body).status_code


def test_demo_says_when_it_had_to_renew_a_credential(
    cli: RunCli, cli_json: CliJson, client: TestClient, session: Session
) -> None:
    first = cli_json("demo")
    rotated = cli_json("partners", "rotate-secret", first["partner"]["clientId"])
    session.execute(update(Merchant).values(password_hash=hash_password("set-by-someone-else")))
    session.commit()

    again = cli("demo")

    assert again.returncode == 0, again.stderr
    for line in (
        f"client_secret  {first['partner']['clientSecret']}  (renewed: the value an earlier "
        "run printed no longer works)",
        f"password {first['merchant']['password']}  (renewed: the value an earlier run "
        "printed no longer works)",
    ):
        assert line in again.stdout
    assert _create_token(client, first["partner"]) == 200
    assert _create_token(client, {**first["partner"], **rotated}) == 403
    assert _sign_in(client, first["merchant"]["password"]) == 200
    assert _sign_in(client, "set-by-someone-else") == 401
    third = cli_json("demo")
    assert third["renewed"] == [] and "(the same on every run)" in cli("demo").stdout


def printed_blocks(stdout: str) -> list[tuple[str, str]]:
    """The (title, commands) blocks of the text output: a `# title` line, then its lines."""
    return re.findall(r"^# (.*)\n((?:[^#\n].*\n?)+)", stdout, re.MULTILINE)


def test_demo_text_output_is_ready_to_paste(cli: RunCli) -> None:
    done = cli("demo")

    assert done.returncode == 0, done.stderr
    assert "Consent-screen flow" in done.stdout
    assert "Pairing-code flow" in done.stdout
    assert "demo@partnerlink.test" in done.stdout
    blocks = printed_blocks(done.stdout)
    assert [title.split(",")[0] for title, _ in blocks[:3]] == ["Step 1", "Step 2", "Step 3"]
    assert len(blocks) == 4
    # Commands are printed whole, one per line, never wrapped.
    command_lines = [line for line in done.stdout.splitlines() if "curl -s" in line]
    assert len(command_lines) >= 9
    assert all(line.count("'") % 2 == 0 for line in command_lines)


def run_bash(script: str, *, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if check:
        assert done.returncode == 0, done.stderr + done.stdout
    return done


@pytest.mark.slow
def test_printed_blocks_run_in_order_against_a_live_server(live_server: LiveServer) -> None:
    done = live_server.cli("demo")
    assert done.returncode == 0, done.stderr
    blocks = [commands for _, commands in printed_blocks(done.stdout)]
    step1, step2, step3, pairing = blocks

    # Each block as pasted, one after the other, into one shell (bash keeps its variables).
    consent_output = run_bash(step1 + step2 + step3).stdout

    lines = consent_output.strip().splitlines()
    assert lines[0].startswith("plk_it_")
    assert '"status":"finished"' in consent_output
    stored = json.loads(lines[-1])["store"]
    assert stored["name"] == "Demo Bistro (from the POS)"

    paired_output = run_bash(pairing).stdout

    paired = json.loads(paired_output.strip().splitlines()[-1])["store"]
    assert paired["name"] == "Demo Bistro (from the POS)"
    assert paired["id"] != stored["id"]  # consent to a profile made a store of its own


@pytest.mark.slow
def test_step_three_without_an_approval_says_why_it_stops(live_server: LiveServer) -> None:
    done = live_server.cli("demo")
    step1, _step2, step3, _pairing = [c for _, c in printed_blocks(done.stdout)]
    decline = (
        'MS=$(curl -s -X POST "$BASE/merchant/api/sessions" '
        "-H 'Content-Type: application/json' "
        f'-d \'{{"email": "demo@partnerlink.test", "password": "{password(done.stdout)}"}}\' '
        "| pick sessionToken)\n"
        'curl -s -X POST "$BASE/merchant/api/consents/$IT/decline" -H "Authorization: Bearer $MS" '
        "-H 'Content-Type: application/json' -d '{\"clientId\": \"'\"$CID\"'\"}'; echo\n"
    )

    stopped = run_bash(step1 + decline + step3, check=False)

    assert stopped.returncode != 0
    assert '"status":"cancelled"' in stopped.stdout
    assert "no accessToken in the answer" in stopped.stderr
    assert '"code":"not_finished"' in stopped.stderr
    assert "Traceback" not in stopped.stderr


def password(stdout: str) -> str:
    found = re.search(r"password (\S+)", stdout)
    assert found is not None
    return found.group(1)


@pytest.mark.slow
def test_the_paired_demo_store_texts_a_receipt_for_a_closed_order(live_server: LiveServer) -> None:
    """The walkthrough's order through the paired store shows up in `sms list`."""
    done = live_server.cli("demo", "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["store"]["greenInvoices"] is True
    pairing = out["commands"][-1]["command"]
    order = json.dumps(
        {
            "orderId": "A-1001",
            "orderPrice": "2400",
            "orderCurrency": "USD",
            "createdAt": "2026-11-21T12:00:00Z",
            "customerPhoneNumber": "+12175550123",
            "orderDetails": {"orderStatus": "CLOSED", "orderItems": []},
        }
    )
    script = (
        pairing
        + '\ncurl -s "$BASE/v1/stores" -H "Authorization: Bearer $AT"; echo'
        + f"\ncurl -s -X POST \"$BASE/v1/orders\" -H \"Authorization: Bearer $AT\" -H 'Content-Type: application/json' -d '{order}'; echo"
    )

    lines = run_bash(script).stdout.strip().splitlines()

    assert json.loads(lines[-2]) == {"greenInvoices": True}
    assert json.loads(lines[-1]) == {"statusCode": 200}
    messages = json.loads(live_server.cli("sms", "list", "--json").stdout)
    assert [(m["orderId"], m["to"]) for m in messages] == [("A-1001", "+12175550123")]
    assert "/inv/A-1001?k=" in messages[0]["link"]
