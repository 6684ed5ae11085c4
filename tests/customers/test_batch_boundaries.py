"""Where a file is cut into batches changes nothing (customers/ingestion/ingest.py, batch_apply.py):
within a batch the records are planned in memory (merge.py), across batches each one
matches what the earlier ones stored, and both follow the rule as if every record were
applied one after another. Random files drawn from a few emails and phones (duplicates,
phone-only people taking an email, records without email) are ingested whole and in
batches of a few records, into two profiles: the customers must be the same."""

from __future__ import annotations

import random
from typing import Any

import pytest

from partnerlink.customers.ingestion import batch_queries, ingest
from partnerlink.customers.ingestion.upload_emails import EmailsWritten
from tests.customers.conftest import Uploader
from tests.factories import create_connected_store

EMAILS = [f"p{n}@example.com" for n in range(6)]
PHONES = [f"+1415555{n:04d}" for n in range(6)]
NAMES = ["Ann", "Bo", "Cy", None]


def random_file(rng: random.Random, size: int) -> list[dict[str, Any]]:
    records = []
    for _ in range(size):
        record: dict[str, Any] = {}
        shape = rng.random()
        if shape < 0.45:
            record["email"] = rng.choice(EMAILS)
            if rng.random() < 0.6:
                record["phoneNumber"] = rng.choice(PHONES)
        elif shape < 0.95:
            record["phoneNumber"] = rng.choice(PHONES)
        if rng.random() < 0.7:
            record["firstName"] = rng.choice(NAMES)
        if rng.random() < 0.3:
            record["city"] = rng.choice(["Austin", "Boise", None])
        records.append(record)
    return records


@pytest.mark.parametrize("seed", range(12))
def test_the_customers_do_not_depend_on_where_the_batches_are_cut(
    uploader: Uploader, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    _ingest_whole_and_cut(uploader, monkeypatch, random.Random(seed))


@pytest.mark.parametrize("seed", range(4))
def test_a_first_upload_that_looks_up_no_email_still_matches_across_batches(
    uploader: Uploader, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    """The filter of a first upload's emails (upload_emails.py) only spares look-ups: one
    that forgets everything leaves each email an earlier batch wrote to the unique key,
    whose collision sends the batch back to be planned with every look-up."""
    monkeypatch.setattr(EmailsWritten, "maybe_written", lambda self, emails: set())
    _ingest_whole_and_cut(uploader, monkeypatch, random.Random(1000 + seed))


def _ingest_whole_and_cut(
    uploader: Uploader, monkeypatch: pytest.MonkeyPatch, rng: random.Random
) -> None:
    files = [random_file(rng, rng.randrange(10, 40)) for _ in range(3)]
    whole_store = uploader.connected
    cut_store = create_connected_store(
        uploader.session, pos_type="other-pos", email="other@example.com"
    )

    for records in files:  # three uploads, as a partner re-sends its list
        monkeypatch.setattr(ingest, "BATCH_SIZE", 5000)
        whole = uploader.ingest(records, whole_store)
        monkeypatch.setattr(ingest, "BATCH_SIZE", rng.randrange(1, 5))
        cut = uploader.ingest(records, cut_store)
        assert whole["status"] == cut["status"] == "done"
        assert (whole["records"], whole["rejected"]) == (cut["records"], cut["rejected"])

    def people(store: Any) -> list[tuple[Any, ...]]:
        return sorted(uploader.customers(store.profile.id), key=repr)

    assert people(cut_store) == people(whole_store)
    assert len(people(whole_store)) >= 3


def test_a_first_upload_looks_up_only_the_emails_it_may_have_written(
    uploader: Uploader, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Into a profile without customers, batch 2 looks up the email batch 1 wrote and
    not the new one; once the profile has customers, a new upload looks up every email."""
    looked_up: list[set[str]] = []
    load_customers = batch_queries.load_customers

    def recording(session: Any, **kwargs: Any) -> Any:
        if kwargs["column"] == "email" and kwargs["keys"]:  # no keys: no query
            looked_up.append(set(kwargs["keys"]))
        return load_customers(session, **kwargs)

    monkeypatch.setattr(batch_queries, "load_customers", recording)
    monkeypatch.setattr(ingest, "BATCH_SIZE", 2)
    records = [
        {"email": "a@example.com"},
        {"email": "b@example.com"},
        {"email": "a@example.com", "firstName": "Ann"},
        {"email": "c@example.com"},
    ]
    first = uploader.ingest(records)
    assert (first["created"], first["updated"]) == (3, 1)
    assert looked_up == [{"a@example.com"}]  # batch 1 had nothing to look up
    looked_up.clear()
    second = uploader.ingest(records)
    assert (second["created"], second["updated"], second["unchanged"]) == (0, 0, 4)
    assert looked_up == [{"a@example.com", "b@example.com"}, {"a@example.com", "c@example.com"}]
