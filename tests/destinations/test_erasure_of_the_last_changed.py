"""An erasure reaches the audience within one sync even when the erased customer was the
profile's last change (CONTRACT §11): on SQLite, migration 0030's trigger numbered such a
deletion with the erased row's own number, which the destination had already compared up
to, so the incremental sync never saw it (fixed by migration 0037)."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.destinations import fake_meta
from tests.destinations.sync_helpers import Syncing, google_audience, meta_audience
from tests.factories import ConnectedStoreFixture


def test_erasing_the_only_customer_removes_them_from_both_platforms(
    client: TestClient, syncing: Syncing, shop: ConnectedStoreFixture, owner: dict[str, str]
) -> None:
    meta = syncing.api.create(meta_audience())
    google = syncing.api.create(google_audience())
    syncing.run()  # someone@example.com, the profile's one customer and its last change
    assert (
        len(syncing.meta.audiences[fake_meta.AUDIENCE_ID]) == 1
        and len(syncing.google.members()) == 1
    )

    erased = client.post(
        f"/merchant/api/profiles/{shop.profile.id}/customers/erase",
        json={"email": "someone@example.com"},
        headers=owner,
    )
    assert erased.json() == {"erased": 1}
    syncing.api.sync(meta["id"])
    syncing.api.sync(google["id"])
    syncing.run()

    assert syncing.meta.audiences[fake_meta.AUDIENCE_ID] == set() and syncing.google.members() == []
    for created in (meta, google):
        state = syncing.api.get(created["id"])
        assert state["sent"]["removed"] == 1 and state["members"] == 0
