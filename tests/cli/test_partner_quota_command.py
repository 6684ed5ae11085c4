"""`partners update CLIENT_ID --requests-per-minute N` (CONTRACT.md §13)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy.orm import Session

from partnerlink.partners.service import find_partner_by_client_id, requests_per_minute
from tests.cli.conftest import RunCli


def test_requests_per_minute_is_set_and_refused_below_one(
    cli: RunCli, cli_json: Callable[..., Any], session: Session
) -> None:
    created = cli_json("partners", "create", "--name", "Busy", "--pos-type", "busy")
    client_id = created["clientId"]

    updated = cli_json("partners", "update", client_id, "--requests-per-minute", "120")
    again = cli_json("partners", "update", client_id, "--requests-per-minute", "90")

    assert updated == {"clientId": client_id, "requestsPerMinute": 120}
    assert again["requestsPerMinute"] == 90
    partner_id = _partner_id(session, client_id)
    assert requests_per_minute(session, partner_id) == 90
    session.rollback()
    refused = cli("partners", "update", client_id, "--requests-per-minute", "0")
    nothing = cli("partners", "update", client_id)
    assert refused.returncode != 0 and nothing.returncode != 0
    assert requests_per_minute(session, partner_id) == 90


def _partner_id(session: Session, client_id: str) -> str:
    partner = find_partner_by_client_id(session, client_id)
    assert partner is not None
    return partner.id
