"""The worker receives the reader's next batch while the database takes in a COPY
(reader_process.Prefetched, batch_queries.insert_customers' `meanwhile`): the batches
keep their order, what the reading raises comes out where the batch would have, and
the lease's keep-alive stays out of a batch's open transaction (it would wait for the
upload's row, which that transaction holds)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from partnerlink.customers import queries
from partnerlink.customers.ingestion import batch_commit, ingest
from partnerlink.customers.ingestion.json_stream import UploadFileInvalid
from partnerlink.customers.ingestion.reader_process import Prefetched
from partnerlink.settings import Settings
from tests.conftest import ON_POSTGRES
from tests.customers.conftest import Uploader, put_file, upload_url


def test_items_come_in_order_whether_taken_ahead_or_not() -> None:
    items = Prefetched(iter(range(5)))
    taken = [next(items)]
    items.prefetch()
    items.prefetch()  # one item ahead at most
    taken.append(next(items))
    taken.extend(items)
    assert taken == [0, 1, 2, 3, 4]
    items.prefetch()
    with pytest.raises(StopIteration):
        next(items)


def test_what_the_reading_raises_comes_out_of_the_next_next() -> None:
    def reading() -> Iterator[int]:
        yield 1
        raise UploadFileInvalid("the file ends before its array is closed")

    items = Prefetched(reading())
    assert next(items) == 1
    items.prefetch()  # does not raise
    with pytest.raises(UploadFileInvalid):
        next(items)


def test_a_whole_upload_with_prefetching_stores_every_customer(
    uploader: Uploader, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ingest, "SUBPROCESS_MIN_BYTES", 0)  # through the reader process
    monkeypatch.setattr(ingest, "BATCH_SIZE", 7)
    records = [{"email": f"p{n}@example.com", "firstName": f"N{n}"} for n in range(100)]
    records += records[:10]  # duplicates across batches
    status = uploader.ingest(records)
    assert status["status"] == "done", status
    assert (status["created"], status["unchanged"] + status["updated"]) == (100, 10)
    assert len(uploader.customers()) == 100


@pytest.mark.skipif(not ON_POSTGRES, reason="rows are locked by transactions on PostgreSQL")
def test_the_keep_alive_does_not_wait_on_the_row_an_open_batch_holds(
    uploader: Uploader,
) -> None:
    body = json.dumps([{"email": "a@example.com"}]).encode()
    answer = put_file(uploader.client, upload_url(uploader.client, uploader.connected), body)
    assert answer.status_code == 200, answer.text
    sessions = uploader.app.state.sessionmaker
    settings = Settings(**{**uploader.settings.model_dump(), "upload_lease_seconds": 1})
    upload = ingest.claim_upload(sessions, settings)
    assert upload is not None
    keep_alive = ingest._lease_keeper(sessions, settings, upload)
    time.sleep(0.4)  # a renewal is due (a third of the lease)
    finished = threading.Event()
    outcome: list[Any] = []

    def renew() -> None:
        try:
            keep_alive()
        except Exception as error:  # reported below
            outcome.append(error)
        finished.set()

    with sessions() as session, session.begin(), batch_commit._batch_open(upload):
        queries.renew_upload_lease(  # holds the row till commit
            session,
            upload_id=upload.id,
            lease_until=upload.lease_until,
            lease_seconds=settings.upload_lease_seconds,
        )
        thread = threading.Thread(target=renew)
        thread.start()
        assert finished.wait(5), "the keep-alive waited for the batch's own transaction"
    thread.join()
    assert outcome == []
