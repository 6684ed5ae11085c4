"""`partnerlink destinations list [--json]` and `partnerlink destinations sync ID`."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from tests.audiences.helpers import add_customer
from tests.conftest import LiveServer
from tests.destinations import fake_meta
from tests.destinations.fake_meta import FakeMeta
from tests.destinations.sync_helpers import Destinations, meta_audience
from tests.factories import create_connected_store
from tests.merchant.conftest import fresh_sign_in_budgets  # noqa: F401
from tests.merchant.helpers import sign_in


@pytest.fixture
def meta() -> Iterator[FakeMeta]:
    with FakeMeta() as server:
        yield server


def test_list_and_sync_one_destination(
    client: TestClient, session: Session, live_env: dict[str, str], meta: FakeMeta
) -> None:
    shop = create_connected_store(session)
    add_customer(session, shop.store, email="cli@example.com")
    api = Destinations(client, shop.profile.id, sign_in(client))
    created = api.create(meta_audience())
    cli = LiveServer(
        {
            **live_env,
            "PARTNERLINK_META_GRAPH_URL": meta.graph_url,
            "PARTNERLINK_META_API_VERSION": fake_meta.VERSION,
        }
    ).cli

    listed = cli("destinations", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)
    assert [(r["id"], r["profileId"], r["status"]) for r in rows] == [
        (created["id"], shop.profile.id, "pending")
    ]
    assert fake_meta.ACCESS_TOKEN not in listed.stdout

    synced = cli("destinations", "sync", created["id"], "--json")
    assert synced.returncode == 0, synced.stderr
    answer = json.loads(synced.stdout)
    assert answer["result"] == "synced"
    assert answer["destination"]["status"] == "active"
    assert answer["destination"]["members"] == 1
    assert len(meta.audiences[fake_meta.AUDIENCE_ID]) == 1

    text = cli("destinations", "list")
    assert text.returncode == 0 and created["id"] in text.stdout and "active" in text.stdout
    assert fake_meta.ACCESS_TOKEN not in text.stdout + text.stderr

    unknown = cli("destinations", "sync", "no-such-destination")
    assert unknown.returncode != 0 and "no destination" in unknown.stderr
