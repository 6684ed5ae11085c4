"""`partnerlink destinations list [--json]` and `partnerlink destinations sync ID`."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from tests.audiences.helpers import add_customer
from tests.conftest import LiveServer, free_port
from tests.destinations import fake_meta
from tests.destinations.fake_meta import FakeMeta
from tests.destinations.sync_helpers import Destinations, meta_audience, meta_conversions
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


@pytest.mark.parametrize(
    ("graph_url", "said", "code"),
    [
        # Nothing listens there: the platform is away.
        (f"http://127.0.0.1:{free_port()}", "Meta could not be reached", "platform_unavailable"),
        # A URL the HTTP client cannot even build: an unexpected error of ours.
        ("http://[::1", "failed (InvalidURL): The sync failed in PartnerLink", "sync_failed"),
    ],
    # The port is drawn at collection, so the ids must not name it: every xdist worker
    # collects on its own and must see the same test ids.
    ids=["platform_away", "url_unbuildable"],
)
def test_a_failed_sync_is_one_line_and_exit_1(
    client: TestClient,
    session: Session,
    live_env: dict[str, str],
    graph_url: str,
    said: str,
    code: str,
) -> None:
    shop = create_connected_store(session)
    add_customer(session, shop.store, email="cli@example.com")
    created = Destinations(client, shop.profile.id, sign_in(client)).create(meta_audience())
    cli = LiveServer(
        {
            **live_env,
            "PARTNERLINK_META_GRAPH_URL": graph_url,
            "PARTNERLINK_AD_REQUEST_TIMEOUT_SECONDS": "2",
        }
    ).cli

    failed = cli("destinations", "sync", created["id"])
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert failed.stdout == ""
    lines = failed.stderr.strip().splitlines()
    assert len(lines) == 1, failed.stderr
    assert lines[0].startswith(f"error: sync of destination {created['id']} failed")
    assert said in lines[0] and lines[0].endswith(f"({code})")
    assert "Traceback" not in failed.stderr

    as_json = cli("destinations", "sync", created["id"], "--json")
    assert as_json.returncode == 1 and "Traceback" not in as_json.stderr
    answer = json.loads(as_json.stdout)
    assert answer["code"] == code and said in answer["error"]


def test_the_list_says_what_a_sales_destination_has_for_members(
    client: TestClient, session: Session, live_env: dict[str, str]
) -> None:
    shop = create_connected_store(session)
    api = Destinations(client, shop.profile.id, sign_in(client))
    sales = api.create(meta_conversions())
    audience = api.create(meta_audience())
    listed = LiveServer(live_env).cli("destinations", "list")
    assert listed.returncode == 0, listed.stderr
    lines = {line.split()[0]: line for line in listed.stdout.splitlines()}
    assert "None" not in listed.stdout
    assert "  members -  " in lines[sales["id"]]
    assert "  members 0  " in lines[audience["id"]]
