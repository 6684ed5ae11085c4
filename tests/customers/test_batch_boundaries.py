"""Where a file is cut into batches changes nothing (customers/ingest.py, batch_apply.py):
within a batch the records are planned in memory (merge.py), across batches each one
matches what the earlier ones stored, and both follow the rule as if every record were
applied one after another. Random files drawn from a few emails and phones (duplicates,
phone-only people taking an email, records without email) are ingested whole and in
batches of a few records, into two profiles: the customers must be the same."""

from __future__ import annotations

import random
from typing import Any

import pytest

from partnerlink.customers import ingest
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
    rng = random.Random(seed)
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
