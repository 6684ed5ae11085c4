"""`PARTNERLINK_DATABASE_READ_URL` (issue 28): results, lift, audiences and exports read a
PostgreSQL hot standby; writes never go there.

Two database hosts: a primary and a standby made by `pg_basebackup -R`, streaming from
it. The server runs beside them with the primary as its database and the standby as its
read database. While the standby's replay is paused, orders still go in (a standby would
refuse them) and the reads keep answering what the standby holds; once replay resumes,
they catch up.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from partnerlink.db.engine import make_engine, make_sessionmaker
from partnerlink.settings import Settings
from tests.conftest import ON_POSTGRES, LiveServer
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
