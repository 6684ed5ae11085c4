"""Meta's match results (CONTRACT §15): after a sync of a Meta audience the worker reads
the audience's `approximate_count_lower_bound`/`_upper_bound` into lastReport.meta,
beside Google's verdicts (lastReport.google), and a failure of that read never fails
the sync."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import update
from sqlalchemy.orm import Session

from partnerlink.db.base import utcnow
from partnerlink.destinations.meta import MetaClient
from partnerlink.destinations.models import Destination
from partnerlink.destinations.platform import PlatformError
from partnerlink.destinations.schemas import last_report
from partnerlink.destinations.web import meta_in_words
from tests.destinations import fake_meta
from tests.destinations.fake_meta import AUDIENCE_ID, FakeMeta
from tests.destinations.sync_helpers import Syncing, meta_audience, meta_conversions


def _row(n: int) -> list[str]:
    return [f"{n:064x}", "", "", "", "", ""]


def test_the_client_reads_the_estimate_meta_rounds(
    fake_meta_server: FakeMeta, meta_client: MetaClient
) -> None:
    assert meta_client.audience_size(AUDIENCE_ID) == (None, None)  # too few to estimate
    meta_client.add_users(AUDIENCE_ID, [_row(n) for n in range(1_050)])
    assert meta_client.audience_size(AUDIENCE_ID) == (1_000, 1_100)
    asked = fake_meta_server.requests[-1]
    assert asked.method == "GET" and asked.path.startswith(f"/{fake_meta.VERSION}/{AUDIENCE_ID}?")
    assert "approximate_count_lower_bound" in asked.path
    assert asked.headers["authorization"] == f"Bearer {fake_meta.ACCESS_TOKEN}"
    assert fake_meta.ACCESS_TOKEN not in asked.path
    with pytest.raises(PlatformError):
        meta_client.audience_size("99999")  # no such audience


def test_a_sync_keeps_metas_estimate_beside_googles_verdicts(
    syncing: Syncing, session: Session
) -> None:
    syncing.meta.sizes[AUDIENCE_ID] = (1_000, 1_100)
    created = syncing.api.create(meta_audience())
    google = {"recordCount": 5, "matchRateRange": {"low": 20, "high": 30}}
    session.execute(
        update(Destination)
        .where(Destination.id == created["id"])
        .values(match_report={"google": google})
    )
    session.commit()
    syncing.run()
    report = syncing.api.get(created["id"])["lastReport"]
    assert report["num_received"] == 1  # Meta's answer to the sync, as before
    assert report["google"] == google  # not overwritten
    meta = report["meta"]
    assert (meta["approximateCountLowerBound"], meta["approximateCountUpperBound"]) == (
        1_000,
        1_100,
    )
    # Under Meta's own names too, as CONTRACT §15 names them.
    assert (meta["approximate_count_lower_bound"], meta["approximate_count_upper_bound"]) == (
        1_000,
        1_100,
    )
    assert meta["readAt"].endswith("+00:00")
    assert meta_in_words(meta) == "Meta estimates the audience at 1,000–1,100 people."

    # Nothing to send and the estimate read moments ago: no call at all.
    calls = len(syncing.meta.requests)
    syncing.api.sync(created["id"])
    syncing.run()
    assert len(syncing.meta.requests) == calls
    # An hour later Meta is asked again (it revises the estimate as it matches).
    syncing.meta.sizes[AUDIENCE_ID] = (1_100, 1_200)
    hour_ago = (utcnow() - timedelta(hours=1, seconds=1)).isoformat()
    session.execute(
        update(Destination)
        .where(Destination.id == created["id"])
        .values(match_report={"google": google, "meta": {**meta, "readAt": hour_ago}})
    )
    session.commit()
    syncing.api.sync(created["id"])
    syncing.run()
    report = syncing.api.get(created["id"])["lastReport"]
    assert report["meta"]["approximateCountUpperBound"] == 1_200 and report["google"] == google


@pytest.mark.parametrize("failure", ["server error", "exception"])
def test_a_failed_read_of_the_estimate_never_fails_the_sync(
    failure: str,
    syncing: Syncing,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    created = syncing.api.create(meta_audience())
    if failure == "exception":

        def broken(self: MetaClient, audience_id: str) -> tuple[int, int]:
            raise RuntimeError("boom")

        monkeypatch.setattr(MetaClient, "audience_size", broken)
    else:
        # The users call answered as Meta does, then the read of the size fails.
        syncing.meta.answer_next(200, {"num_received": 1, "num_invalid_entries": 0})
        syncing.meta.server_error_next(500)
    syncing.run()
    state = syncing.api.get(created["id"])
    assert state["status"] == "active" and state["lastError"] is None
    assert state["sent"]["added"] == 1
    assert "meta" not in state["lastReport"]


def test_no_estimate_is_read_for_sales(syncing: Syncing, session: Session) -> None:
    created = syncing.api.create(meta_conversions())
    syncing.run()
    assert all(request.method == "POST" for request in syncing.meta.requests)
    destination = session.get(Destination, created["id"])
    assert destination is not None and last_report(destination) is None
    session.rollback()


def test_last_report_shows_each_platforms_results_beside_the_answer() -> None:
    destination = Destination(
        last_report={"requestId": "r-1"},
        match_report={"google": {"recordCount": 3}, "meta": {"approximateCountLowerBound": 1}},
    )
    assert last_report(destination) == {
        "requestId": "r-1",
        "google": {"recordCount": 3},
        "meta": {"approximateCountLowerBound": 1},
    }
    assert last_report(Destination(last_report=None, match_report=None)) is None
    assert last_report(Destination(last_report=None, match_report={"google": {"x": 1}})) == {
        "google": {"x": 1}
    }


def test_meta_words() -> None:
    assert meta_in_words(None) is None
    assert meta_in_words({"approximateCountLowerBound": None}) == (
        "Meta has not estimated the audience's size yet."
    )
    assert meta_in_words(
        {"approximateCountLowerBound": 5_000, "approximateCountUpperBound": 5_000}
    ) == ("Meta estimates the audience at about 5,000 people.")
