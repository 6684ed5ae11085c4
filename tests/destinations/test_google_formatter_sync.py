"""Rows a Google destination holds from before Google's formatter (CONTRACT §8): the
formatter is part of the sync's basis, so the next sync compares every member once and
replaces a row made by the old rule (removed by it, added by the new)."""

from __future__ import annotations

import hashlib
import json

from sqlalchemy import text
from sqlalchemy.orm import Session

from partnerlink.kit.digests import sha256_hex
from partnerlink.stores.models import Store
from tests.audiences.helpers import add_customer
from tests.destinations.sync_helpers import Syncing, google_audience, run_sql
from tests.factories import ConnectedStoreFixture


def _row(*identifiers: dict[str, str]) -> str:
    return json.dumps({"userIdentifiers": list(identifiers)}, separators=(",", ":"), sort_keys=True)


def test_rows_held_under_the_old_rule_are_replaced_once(
    session: Session, syncing: Syncing, shop: ConnectedStoreFixture
) -> None:
    store: Store = shop.store
    jane = add_customer(session, store, email="jane.doe+ads@googlemail.com").id
    session.rollback()
    created = syncing.api.create(google_audience())
    syncing.run()
    new_hash = hashlib.sha256(b"janedoe@googlemail.com").hexdigest()
    assert {"userIdentifiers": [{"emailAddress": new_hash}]} in syncing.google.members()

    # As a destination synced before the formatter held it: the old rule's row (dots and
    # tag kept) under the old basis.
    old_row = _row({"emailAddress": sha256_hex("jane.doe+ads@googlemail.com")})
    run_sql(
        session,
        "UPDATE destination_members SET sent = :sent WHERE customer_id = :c",
        sent=old_row,
        c=jane,
    )
    run_sql(session, "UPDATE destinations SET members_basis = 'before-the-formatter'")
    requests_before = len(syncing.google.bodies)

    syncing.api.sync(created["id"])
    syncing.run()

    sent = syncing.google.bodies[requests_before:]
    paths = [
        r.path for r in syncing.google.requests_to(lambda r: r.path.startswith("/v1/audience"))
    ]
    assert paths[-2:] == ["/v1/audienceMembers:remove", "/v1/audienceMembers:ingest"]
    assert [m["userData"] for m in sent[0]["audienceMembers"]] == [json.loads(old_row)]
    assert [m["userData"] for m in sent[1]["audienceMembers"]] == [
        {"userIdentifiers": [{"emailAddress": new_hash}]}
    ]
    held = session.execute(
        text(
            "SELECT sent, members_basis FROM destination_members JOIN destinations "
            "ON destinations.id = destination_members.destination_id WHERE customer_id = :c"
        ),
        {"c": jane},
    ).one()
    session.rollback()
    assert held.sent == _row({"emailAddress": new_hash})
    assert held.members_basis != "before-the-formatter"

    # The basis stays from then on: the next sync sends nothing.
    syncing.api.sync(created["id"])
    syncing.run()
    assert len(syncing.google.bodies) == requests_before + 2
