"""`partners create|update --redirect-uri` (CONTRACT §13): OAuth redirect URIs, exact strings."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from partnerlink.partners.models import Partner
from tests.cli.conftest import RunCli
from tests.connect.conftest import fetch_one

FIRST = "https://pos.example.com/oauth/callback"
SECOND = "http://127.0.0.1:8765/callback?app=desk"


def test_redirect_uris_are_registered_replaced_and_checked(
    cli: RunCli, cli_json: Callable[..., Any], session: Session
) -> None:
    created = cli_json(
        "partners", "create", "--name", "Acme", "--pos-type", "acme",
        "--redirect-uri", FIRST, "--redirect-uri", SECOND,
    )  # fmt: skip
    assert created["redirectUris"] == [FIRST, SECOND]
    updated = cli_json("partners", "update", created["clientId"], "--redirect-uri", SECOND)
    assert updated == {"clientId": created["clientId"], "redirectUris": [SECOND]}
    partner = fetch_one(session, select(Partner))
    assert partner.redirect_uris == [SECOND]
    for bad in ("/relative/path", "ftp://pos.example.com/cb", FIRST + "#fragment"):
        refused = cli("partners", "update", created["clientId"], "--redirect-uri", bad)
        assert refused.returncode != 0
    assert fetch_one(session, select(Partner)).redirect_uris == [SECOND]
    nothing = cli("partners", "update", created["clientId"])
    assert nothing.returncode == 2
