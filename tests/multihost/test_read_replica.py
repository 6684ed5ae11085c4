"""`PARTNERLINK_DATABASE_READ_URL` (issue 28): results, lift, audiences, exports, the
ad-platform syncs and the stored audience sizes read a PostgreSQL hot standby; writes
never go there.

Two database hosts: a primary and a standby made by `pg_basebackup -R`, streaming from
it. The server runs beside them with the primary as its database and the standby as its
read database. While the standby's replay is paused, orders still go in (a standby would
refuse them) and the reads keep answering what the standby holds; once replay resumes,
they catch up. The worker's reads (an audience sync, a conversions sync, the count of
a large profile's audience sizes) go to the standby once it replayed the primary's
position, and to the primary while replay is paused.
"""

from __future__ import annotations

import contextlib
import csv
import io
import itertools
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import httpx
import pytest
from sqlalchemy.orm import Session, sessionmaker

from partnerlink.audiences import one_pass, stored_sizes
from partnerlink.audiences.models import StoredSizes
from partnerlink.audiences.service import audience_scope
from partnerlink.audiences.stored_sizes import forget, listed
from partnerlink.audiences.tasks import refresh_stored_sizes, wait_for_refreshes
from partnerlink.db import replica
from partnerlink.db.base import utcnow
from partnerlink.db.engine import make_engine, make_sessionmaker
from partnerlink.db.migrate import upgrade
from partnerlink.destinations import service
from partnerlink.destinations.models import Destination
from partnerlink.destinations.schemas import destination_request
from partnerlink.destinations.tasks import sync_now
from partnerlink.settings import Settings
from tests.audiences.helpers import add_customer, add_order
from tests.conftest import ON_POSTGRES, LiveServer
from tests.destinations import fake_meta
from tests.destinations.fake_meta import FakeMeta
from tests.destinations.sync_helpers import customer_row, meta_audience, meta_conversions
from tests.multihost.netns import hosts
from tests.multihost.replica import Cluster, postgres_bin, primary_and_standby, wait_replayed
from tests.orders.builders import order_body
from tests.pairing.builders import Shop, create_shop, pair, reserve

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not ON_POSTGRES, reason="streaming replication is PostgreSQL's"),
]


@pytest.fixture(scope="module")
def cluster() -> Iterator[tuple[Cluster, Cluster]]:
    """The primary and its standby, shared by this file's tests (each has a shop of its
    own, and finds replay running): made once, in about 15 s."""
    assert postgres_bin(), "PostgreSQL's server programs are needed for the replica test"
    with (
        hosts(2) as (primary_host, standby_host),
        primary_and_standby(primary_host, standby_host) as (primary, standby),
    ):
        upgrade(primary.url)  # the standby replays the schema
        yield primary, standby


_shops = itertools.count()


@contextlib.contextmanager
def _own_shop(cluster: tuple[Cluster, Cluster]) -> Iterator[tuple[sessionmaker[Session], Shop]]:
    """The primary's sessions and a shop of the test's own (partner, merchant, profile);
    replay resumes when the test ends, whatever it paused."""
    primary, standby = cluster
    engine = make_engine(Settings(database_url=primary.url).database_url)
    n = next(_shops)
    try:
        sessions = make_sessionmaker(engine)
        with sessions() as session:
            shop = create_shop(session, email=f"owner{n}@example.com", pos_type=f"acme-pos-{n}")
        yield sessions, shop
    finally:
        standby.scalar("SELECT pg_wal_replay_resume()")
        engine.dispose()


@pytest.fixture
def replicated(cluster: tuple[Cluster, Cluster], tmp_path: Path) -> Iterator[dict[str, Any]]:
    primary, standby = cluster
    server = LiveServer(
        {
            "PARTNERLINK_DATABASE_URL": primary.url,
            "PARTNERLINK_DATABASE_READ_URL": standby.url,
            "PARTNERLINK_SECRET_KEY": "replica-test-secret-key",
            "PARTNERLINK_DATA_DIR": str(tmp_path),
        }
    )
    with _own_shop(cluster) as (_sessions, shop):
        server.start()
        try:
            yield {"server": server, "primary": primary, "standby": standby, "shop": shop}
        finally:
            server.stop()


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
        profile = shop.store.profile_id
        assert primary.scalar(f"SELECT count(*) FROM orders WHERE profile_id = '{profile}'") == 3
        assert _orders_in_results(client, shop) == 2
        assert _audience_sizes(client, shop) == (2, 2)

        # Replay resumes; the reads catch up.
        standby.scalar("SELECT pg_wal_replay_resume()")
        wait_replayed(primary, standby)
        assert _orders_in_results(client, shop) == 3
        assert _audience_sizes(client, shop) == (3, 3)


SCANS = (
    "SELECT coalesce(seq_scan, 0) + coalesce(idx_scan, 0) FROM pg_stat_user_tables"
    " WHERE relname = %s"
)


def _scans(cluster: Cluster, table: str = "customers") -> int:
    with cluster.connect() as conn:
        conn.execute("SELECT pg_stat_clear_snapshot()")
        row = conn.execute(SCANS, (table,)).fetchone()
        return int(row[0]) if row else 0


OTHER_CLIENTS = (
    "SELECT count(*) FROM pg_stat_activity"
    " WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"
)


def _scans_so_far(
    sessions: sessionmaker[Session],
    settings: Settings,
    clusters: tuple[Cluster, Cluster],
    table: str = "customers",
) -> tuple[int, int]:
    """(the primary's, the standby's) scans of `table` so far. A backend flushes its
    statistics when it ends (an idle one only every ten seconds or so): the test's and the
    worker's connection pools are emptied and, once no other client is connected to
    either server, every scan done so far is counted."""
    sessions.kw["bind"].dispose()
    read_sessions = replica.read_sessions(settings)
    assert read_sessions is not None
    read_sessions.kw["bind"].dispose()
    for cluster in clusters:
        deadline = time.monotonic() + 10
        while cluster.scalar(OTHER_CLIENTS):
            assert time.monotonic() < deadline, "a connection to the database stayed open"
            time.sleep(0.02)
    primary, standby = clusters
    return _scans(primary, table), _scans(standby, table)


class Replicated(NamedTuple):
    """The worker's side: its settings (the standby as read database, the local Meta
    server), the primary's sessions, both servers, Meta and the test's shop."""

    settings: Settings
    sessions: sessionmaker[Session]
    primary: Cluster
    standby: Cluster
    meta: FakeMeta
    shop: Shop


@pytest.fixture
def replicated_sync(cluster: tuple[Cluster, Cluster], tmp_path: Path) -> Iterator[Replicated]:
    primary, standby = cluster
    with FakeMeta() as meta, _own_shop(cluster) as (sessions, shop):
        settings = Settings(
            database_url=primary.url,
            database_read_url=standby.url,
            secret_key="replica-sync-test-secret-key",
            data_dir=tmp_path,
            meta_graph_url=meta.graph_url,
            meta_api_version=fake_meta.VERSION,
            ad_request_timeout_seconds=5.0,
        )
        yield Replicated(settings, sessions, primary, standby, meta, shop)


def _destination(
    sessions: sessionmaker[Session],
    settings: Settings,
    shop: Shop,
    body: dict[str, Any] | None = None,
) -> str:
    with sessions.begin() as session:
        destination: Destination = service.create(
            session,
            profile_id=shop.store.profile_id,
            request=destination_request(body or meta_audience()),
            signing_key=settings.signing_key,
        )
        return destination.id


# The ad-platform sync (the worker) reads the standby once it has replayed what the
# primary held when the sync began; otherwise the primary. Which database did the sync's
# reads is told by the scan statistics of `customers` (each server counts its own scans).


def test_the_sync_reads_the_standby_once_caught_up_else_the_primary(
    replicated_sync: Replicated,
) -> None:
    settings, sessions, primary, standby, meta, shop = replicated_sync
    held = meta.audiences[fake_meta.AUDIENCE_ID]

    with sessions() as session:
        first = [add_customer(session, shop.store, email=f"buyer{n}@example.com") for n in range(3)]
    destination_id = _destination(sessions, settings, shop)

    # Replay running: the standby catches up within the sync's wait and does its reads.
    clusters = (primary, standby)
    primary_before, standby_before = _scans_so_far(sessions, settings, clusters)
    assert sync_now(sessions, settings, destination_id).result == "synced"
    assert held == {customer_row(c) for c in first}
    primary_after, standby_after = _scans_so_far(sessions, settings, clusters)
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
    primary_before, standby_before = _scans_so_far(sessions, settings, clusters)
    started = time.monotonic()
    assert sync_now(sessions, settings, destination_id).result == "synced"
    print(f"paused: the sync took {time.monotonic() - started:.1f} s")
    assert customer_row(late) in held and len(held) == 4
    primary_after, standby_after = _scans_so_far(sessions, settings, clusters)
    assert standby_after == standby_before, "a sync read the standby that had not caught up"
    fallback_on_primary = primary_after - primary_before
    print(f"paused: standby +0, primary +{fallback_on_primary}")
    assert fallback_on_primary > on_primary


def _sales(meta: FakeMeta) -> list[str]:
    """The order ids of the purchase events the local Meta server took, in arrival order;
    each event id is distinct (none was sent twice)."""
    events = meta.datasets[fake_meta.DATASET_ID]
    assert len({e["event_id"] for e in events}) == len(events)
    return [e["custom_data"]["order_id"] for e in events]


def test_the_conversions_sync_reads_the_standby_once_caught_up_else_the_primary(
    replicated_sync: Replicated,
) -> None:
    """The same check for a conversions destination (Meta's Conversions API): the orders
    still to send are read on the standby once it caught up, and each eligible sale
    reaches Meta once; with replay paused, the primary, and a sale recorded since."""
    settings, sessions, primary, standby, meta, shop = replicated_sync
    partner = shop.partner.partner.id

    with sessions() as session:
        buyers = [
            add_customer(session, shop.store, email=f"buyer{n}@example.com") for n in range(3)
        ]
        due = [
            add_order(session, shop.store, c, days_ago=1, partner_id=partner, status="CLOSED")
            for c in buyers
        ]
        add_order(session, shop.store, buyers[0], days_ago=1, partner_id=partner, status="OPEN")
    destination_id = _destination(sessions, settings, shop, meta_conversions())

    clusters = (primary, standby)
    primary_before, standby_before = _scans_so_far(sessions, settings, clusters, "orders")
    assert sync_now(sessions, settings, destination_id).result == "synced"
    assert sorted(_sales(meta)) == sorted(o.order_id for o in due)
    primary_after, standby_after = _scans_so_far(sessions, settings, clusters, "orders")
    assert standby_after > standby_before, "the sync's reads did not run on the standby"
    on_primary = primary_after - primary_before
    print(f"caught up: standby +{standby_after - standby_before}, primary +{on_primary}")

    # Replay paused: the standby holds neither the sale recorded now nor the record of
    # the three sent; read there, the sync would miss the one and send the others again.
    standby.scalar("SELECT pg_wal_replay_pause()")
    with sessions() as session:
        late = add_order(
            session, shop.store, buyers[1], days_ago=0, partner_id=partner, status="closed"
        )
    with sessions.begin() as session:
        session.get_one(Destination, destination_id).sync_requested = True
    primary_before, standby_before = _scans_so_far(sessions, settings, clusters, "orders")
    assert sync_now(sessions, settings, destination_id).result == "synced"
    # The late sale is on the primary only: sent, it was read there.
    assert sorted(_sales(meta)) == sorted(o.order_id for o in [*due, late])
    primary_after, standby_after = _scans_so_far(sessions, settings, clusters, "orders")
    assert standby_after == standby_before, "a sync read a standby behind"
    fallback_on_primary = primary_after - primary_before
    print(f"paused: standby +0, primary +{fallback_on_primary}")
    assert fallback_on_primary > on_primary
    standby.scalar("SELECT pg_wal_replay_resume()")


MAX_AGE = 300


def _stored_everyone(sessions: sessionmaker[Session], profile_id: str) -> int | None:
    """The stored size of the profile's `all` segment; None while the row is empty."""
    with sessions() as session:
        row = session.get_one(StoredSizes, profile_id)
        if row.audiences is None:
            return None
        return next(a["customers"] for a in json.loads(row.audiences) if a["segment"] == "all")


def _refresh(sessions: sessionmaker[Session], settings: Settings) -> None:
    assert refresh_stored_sizes(sessions, settings) == 1
    wait_for_refreshes()


def test_stored_audience_sizes_are_counted_on_the_standby_once_caught_up_else_the_primary(
    replicated_sync: Replicated, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A large profile's stored audience sizes (docs/audiences.md): the worker's count
    reads the standby once it has replayed the primary's position, else the primary; the
    stored row is written on the primary. A list request counted on a standby behind
    answers that count but does not store it."""
    monkeypatch.setattr(stored_sizes, "LARGE_AFTER_SECONDS", 0.0)  # every profile is large
    _settings, sessions, primary, standby, _meta, shop = replicated_sync
    settings = _settings.model_copy(update={"audience_sizes_max_age_seconds": MAX_AGE})
    store, profile_id = shop.store, shop.store.profile_id
    with sessions() as session:
        for n in range(3):
            add_customer(session, store, email=f"buyer{n}@example.com")
    with sessions.begin() as session:  # a large profile's list, asked for a moment ago
        session.add(
            StoredSizes(
                profile_id=profile_id, generation=0, took_seconds=1.0, requested_at=utcnow()
            )
        )

    # Replay running: the count runs on the standby, caught up with the fourth customer.
    with sessions() as session:
        add_customer(session, store, email="fourth@example.com")
    clusters = (primary, standby)
    primary_before, standby_before = _scans_so_far(sessions, settings, clusters)
    _refresh(sessions, settings)
    assert _stored_everyone(sessions, profile_id) == 4
    primary_after, standby_after = _scans_so_far(sessions, settings, clusters)
    assert standby_after > standby_before, "the count did not run on the standby"
    assert primary_after == primary_before, "the count ran on the primary"

    # Replay paused, then a change that empties the stored count (as an opt-out does).
    standby.scalar("SELECT pg_wal_replay_pause()")
    with sessions() as session:
        add_customer(session, store, email="late@example.com")
    with sessions.begin() as session:
        forget(session, [profile_id])
    # A list request reads the standby: it answers the standby's count and stores none.
    replica_sessions = replica.read_sessions(settings)
    assert replica_sessions is not None
    with sessions() as session, replica_sessions() as reads:
        answered = listed(session, reads, profile_id=profile_id, settings=settings)
        session.commit()
    assert next(a["customers"] for a in answered.audiences if a["segment"] == "all") == 4
    assert _stored_everyone(sessions, profile_id) is None

    # The worker's count falls back to the primary, which holds the late customer.
    primary_before, standby_before = _scans_so_far(sessions, settings, clusters)
    _refresh(sessions, settings)
    assert _stored_everyone(sessions, profile_id) == 5
    primary_after, standby_after = _scans_so_far(sessions, settings, clusters)
    assert standby_after == standby_before, "a count read a standby behind"
    assert primary_after > primary_before, "the count did not run on the primary"
    standby.scalar("SELECT pg_wal_replay_resume()")


def test_a_large_profile_is_counted_in_two_halves_on_the_standby(
    cluster: tuple[Cluster, Cluster],
) -> None:
    """A large profile's audience sizes, counted in two halves at once (one snapshot
    exported on the standby and imported by the second half's connection, as PostgreSQL
    allows since version 10), count as the one statement does (audiences/one_pass.py)."""
    primary, standby = cluster
    with _own_shop(cluster) as (sessions, shop):
        with sessions() as session:
            for n in range(6):
                phone = f"+1415555{n:04d}" if n % 2 else None
                customer = add_customer(
                    session, shop.store, email=f"half{n}@example.com", phone=phone
                )
                if n % 3:
                    add_order(
                        session,
                        shop.store,
                        customer,
                        days_ago=n,
                        price=1000 * (1 + n % 2),
                        partner_id=shop.partner.partner.id,
                    )
        wait_replayed(primary, standby)
        engine = make_engine(Settings(database_url=standby.url).database_url)
        try:
            with make_sessionmaker(engine)() as reads:
                scope = audience_scope(reads, shop.store.profile_id, b"k" * 32)
                whole = one_pass.segment_sizes(reads.connection(), scope, split_from=None)
                halves = one_pass.segment_sizes(reads.connection(), scope, split_from=0)
        finally:
            engine.dispose()
    assert halves == whole
    assert whole.sizes["all"] == (6, 6, 3) and whole.sizes["buyers"][0] == 4
