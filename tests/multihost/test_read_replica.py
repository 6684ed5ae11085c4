"""`PARTNERLINK_DATABASE_READ_URL` (issue 28): results, lift, audiences, exports and the
ad-platform sync read a PostgreSQL hot standby; writes never go there.

Two database hosts: a primary and a standby made by `pg_basebackup -R`, streaming from
it. The server runs beside them with the primary as its database and the standby as its
read database. While the standby's replay is paused, orders still go in (a standby would
refuse them) and the reads keep answering what the standby holds; once replay resumes,
they catch up.
"""

from __future__ import annotations

import csv
import io
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy.orm import Session, sessionmaker

from partnerlink.db.engine import make_engine, make_sessionmaker
from partnerlink.db.migrate import upgrade
from partnerlink.destinations import service
from partnerlink.destinations.models import Destination
from partnerlink.destinations.schemas import destination_request
from partnerlink.destinations.tasks import sync_now
from partnerlink.settings import Settings
from tests.audiences.helpers import add_customer
from tests.conftest import ON_POSTGRES, LiveServer
from tests.destinations import fake_meta
from tests.destinations.fake_meta import FakeMeta
from tests.destinations.sync_helpers import customer_row, meta_audience
from tests.multihost.netns import hosts
from tests.multihost.replica import Cluster, postgres_bin, primary_and_standby, wait_replayed
from tests.orders.builders import order_body
from tests.pairing.builders import Shop, create_shop, pair, reserve

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not ON_POSTGRES, reason="streaming replication is PostgreSQL's"),
]


@pytest.fixture
def replicated(tmp_path: Path) -> Iterator[dict[str, Any]]:
    assert postgres_bin(), "PostgreSQL's server programs are needed for the replica test"
    with (
        hosts(2) as (primary_host, standby_host),
        primary_and_standby(primary_host, standby_host) as (primary, standby),
    ):
        server = LiveServer(
            {
                "PARTNERLINK_DATABASE_URL": primary.url,
                "PARTNERLINK_DATABASE_READ_URL": standby.url,
                "PARTNERLINK_SECRET_KEY": "replica-test-secret-key",
                "PARTNERLINK_DATA_DIR": str(tmp_path),
            }
        )
        server.start()  # migrates the primary; the standby replays the schema
        engine = make_engine(Settings(database_url=primary.url).database_url)
        try:
            with make_sessionmaker(engine)() as session:
                shop = create_shop(session)
            yield {"server": server, "primary": primary, "standby": standby, "shop": shop}
        finally:
            server.stop()
            engine.dispose()


def _orders_in_results(client: httpx.Client, shop: Shop) -> int:
    answer = client.get(
        f"/merchant/api/profiles/{shop.store.profile_id}/results",
        params={"from": "2024-04-01", "to": "2024-06-30"},
        headers=shop.merchant_auth,
    )
    assert answer.status_code == 200, answer.text
    return sum(group["orders"] for group in answer.json()["classes"].values())


def _audience_sizes(client: httpx.Client, shop: Shop) -> tuple[int, int]:
    """(customers in the `all` segment of the list, rows of its export)."""
    profile = shop.store.profile_id
    listing = client.get(f"/merchant/api/profiles/{profile}/audiences", headers=shop.merchant_auth)
    assert listing.status_code == 200, listing.text
    everyone = next(a for a in listing.json()["audiences"] if a["segment"] == "all")
    export = client.get(
        f"/merchant/api/profiles/{profile}/audiences/all/export",
        params={"format": "meta"},
        headers=shop.merchant_auth,
    )
    assert export.status_code == 200, export.text
    rows = list(csv.DictReader(io.StringIO(export.text)))
    return everyone["customers"], len(rows)


def test_reads_come_from_the_standby_and_writes_never_go_there(
    replicated: dict[str, Any],
) -> None:
    server: LiveServer = replicated["server"]
    primary: Cluster = replicated["primary"]
    standby: Cluster = replicated["standby"]
    shop: Shop = replicated["shop"]
    assert standby.scalar("SELECT pg_is_in_recovery()") is True

    with httpx.Client(base_url=server.url, timeout=30) as client:
        paired = pair(client, reserve(client, shop))
        assert paired.status_code == 200, paired.text
        auth = {"Authorization": f"Bearer {paired.json()['access_token']}"}
        for n in range(2):
            body = order_body(f"R-{n}", customerEmail=f"buyer{n}@example.com")
            body["customerPhoneNumber"] = f"+1415555{n:04d}"
            assert client.post("/v1/orders", json=body, headers=auth).status_code == 200

        wait_replayed(primary, standby)
        assert _orders_in_results(client, shop) == 2
        assert _audience_sizes(client, shop) == (2, 2)

        # The standby stops replaying: what it answers is frozen from here on.
        standby.scalar("SELECT pg_wal_replay_pause()")
        body = order_body("R-late", customerEmail="late@example.com")
        body["customerPhoneNumber"] = "+14155559999"
        # A write goes to the primary (the standby, in recovery, would refuse it: 500).
        assert client.post("/v1/orders", json=body, headers=auth).status_code == 200
        assert primary.scalar("SELECT count(*) FROM orders") == 3
        assert _orders_in_results(client, shop) == 2
        assert _audience_sizes(client, shop) == (2, 2)

        # Replay resumes; the reads catch up.
        standby.scalar("SELECT pg_wal_replay_resume()")
        wait_replayed(primary, standby)
        assert _orders_in_results(client, shop) == 3
        assert _audience_sizes(client, shop) == (3, 3)


SCANS = (
    "SELECT coalesce(seq_scan, 0) + coalesce(idx_scan, 0) FROM pg_stat_user_tables"
    " WHERE relname = 'customers'"
)


def _scans(cluster: Cluster) -> int:
    with cluster.connect() as conn:
        conn.execute("SELECT pg_stat_clear_snapshot()")
        row = conn.execute(SCANS).fetchone()  # type: ignore[arg-type]
        return int(row[0]) if row else 0


def _settled_scans(cluster: Cluster, since: int, *, expect_rise: bool) -> int:
    """The server's scans of `customers` once its backends flushed their statistics
    (about a second after they go idle)."""
    deadline = time.monotonic() + (10 if expect_rise else 3)
    scans = _scans(cluster)
    while time.monotonic() < deadline and not (expect_rise and scans > since):
        time.sleep(0.2)
        scans = _scans(cluster)
    return scans


@pytest.fixture
def replicated_sync(tmp_path: Path) -> Iterator[dict[str, Any]]:
    assert postgres_bin(), "PostgreSQL's server programs are needed for the replica test"
    with (
        hosts(2) as (primary_host, standby_host),
        primary_and_standby(primary_host, standby_host) as (primary, standby),
        FakeMeta() as meta,
    ):
        settings = Settings(
            database_url=primary.url,
            database_read_url=standby.url,
            secret_key="replica-sync-test-secret-key",
            data_dir=tmp_path,
            meta_graph_url=meta.graph_url,
            meta_api_version=fake_meta.VERSION,
            ad_request_timeout_seconds=5.0,
        )
        upgrade(settings.database_url)
        engine = make_engine(settings.database_url)
        try:
            sessions = make_sessionmaker(engine)
            with sessions() as session:
                shop = create_shop(session)
            yield {
                "settings": settings,
                "sessions": sessions,
                "primary": primary,
                "standby": standby,
                "meta": meta,
                "shop": shop,
            }
        finally:
            engine.dispose()


def _destination(sessions: sessionmaker[Session], settings: Settings, shop: Shop) -> str:
    with sessions.begin() as session:
        destination: Destination = service.create(
            session,
            profile_id=shop.store.profile_id,
            request=destination_request(meta_audience()),
            signing_key=settings.signing_key,
        )
        return destination.id


# The ad-platform sync (the worker) reads the standby once it has replayed what the
# primary held when the sync began; otherwise the primary. Which database did the sync's
# reads is told by the scan statistics of `customers` (each server counts its own scans).


def test_the_sync_reads_the_standby_once_caught_up_else_the_primary(
    replicated_sync: dict[str, Any],
) -> None:
    settings: Settings = replicated_sync["settings"]
    sessions: sessionmaker[Session] = replicated_sync["sessions"]
    primary: Cluster = replicated_sync["primary"]
    standby: Cluster = replicated_sync["standby"]
    meta: FakeMeta = replicated_sync["meta"]
    shop: Shop = replicated_sync["shop"]
    held = meta.audiences[fake_meta.AUDIENCE_ID]

    with sessions() as session:
        first = [add_customer(session, shop.store, email=f"buyer{n}@example.com") for n in range(3)]
    destination_id = _destination(sessions, settings, shop)

    # Replay running: the standby catches up within the sync's wait and does its reads.
    primary_before, standby_before = _scans(primary), _scans(standby)
    assert sync_now(sessions, settings, destination_id).result == "synced"
    assert held == {customer_row(c) for c in first}
    standby_after = _settled_scans(standby, standby_before, expect_rise=True)
    primary_after = _settled_scans(primary, primary_before, expect_rise=False)
    assert standby_after > standby_before, "the sync's reads did not run on the standby"
    on_primary = primary_after - primary_before
    print(f"caught up: standby +{standby_after - standby_before}, primary +{on_primary}")

    # Replay paused: the standby never catches up, so the sync reads the primary and
    # sends a customer added since; the standby does no scan of customers.
    standby.scalar("SELECT pg_wal_replay_pause()")
    with sessions() as session:
        late = add_customer(session, shop.store, email="late@example.com")
    with sessions.begin() as session:
        session.get_one(Destination, destination_id).sync_requested = True
    primary_before, standby_before = _scans(primary), _scans(standby)
    started = time.monotonic()
    assert sync_now(sessions, settings, destination_id).result == "synced"
    print(f"paused: the sync took {time.monotonic() - started:.1f} s")
    assert customer_row(late) in held and len(held) == 4
    primary_after = _settled_scans(primary, primary_before, expect_rise=True)
    time.sleep(1.5)
    standby_after = _scans(standby)
    assert standby_after == standby_before, "a sync read the standby that had not caught up"
    fallback_on_primary = primary_after - primary_before
    print(f"paused: standby +0, primary +{fallback_on_primary}")
    assert fallback_on_primary > on_primary
