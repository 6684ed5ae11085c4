"""A first upload's whole-file check runs beside the reading (customers/ingestion/reader_process.py,
`check_beside`) on PostgreSQL, and the batches applied before it has passed stay in one
uncommitted transaction (ingest._apply_until_checked): an invalid file still applies
nothing (CONTRACT.md §6), a valid one ends as if checked first, and a held batch that
meets another writer's customer sends the upload back to the plain path."""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Iterator
from multiprocessing import Pipe
from typing import Any

import pytest
from sqlalchemy import func, select

from partnerlink.customers import tasks
from partnerlink.customers.ingestion import batch_commit, ingest, reader_process
from partnerlink.customers.ingestion.json_stream import UploadFileInvalid
from partnerlink.customers.ingestion.reader import ParsedBatch, read_batches
from partnerlink.customers.models import Customer, Upload
from partnerlink.orders.reclassification import reclassify_customers
from tests.conftest import ON_POSTGRES
from tests.customers.conftest import Uploader, put_file, upload_url

on_postgres = pytest.mark.skipif(not ON_POSTGRES, reason="the check runs beside on PostgreSQL")

RECORDS = 5_000


def people(count: int) -> list[dict[str, Any]]:
    return [
        {"email": f"p{n}@example.com", "phoneNumber": f"+1{628 if n % 2 else 415}555{n // 2:04d}"}
        for n in range(count)
    ]


@pytest.fixture
def reading(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Through the reader process whatever the size, in batches of 500; answers, for each
    reading of the file, whether its check ran beside."""
    monkeypatch.setattr(ingest, "SUBPROCESS_MIN_BYTES", 0)
    monkeypatch.setattr(ingest, "BATCH_SIZE", 500)
    readings: list[bool] = []
    ingest_elsewhere = ingest._ingest_elsewhere

    def recording(*args: Any, check_beside: bool, **kwargs: Any) -> None:
        readings.append(check_beside)
        ingest_elsewhere(*args, check_beside=check_beside, **kwargs)

    monkeypatch.setattr(ingest, "_ingest_elsewhere", recording)
    return readings


def stored(uploader: Uploader) -> int:
    uploader.session.expire_all()
    return int(
        uploader.session.scalar(
            select(func.count())
            .select_from(Customer)
            .where(Customer.profile_id == uploader.connected.profile.id)
        )
        or 0
    )


def claimed(uploader: Uploader, records: list[dict[str, Any]]) -> batch_commit.ClaimedUpload:
    """`records` stored through the upload URL and claimed, as the worker would."""
    answer = put_file(
        uploader.client,
        upload_url(uploader.client, uploader.connected),
        json.dumps(records).encode(),
    )
    assert answer.status_code == 200, answer.text
    upload = ingest.claim_upload(uploader.app.state.sessionmaker, uploader.settings)
    assert upload is not None and upload.first_list
    return upload


def batches_of(records: list[dict[str, Any]], size: int) -> list[ParsedBatch]:
    stream = io.BytesIO(json.dumps(records).encode())
    return list(
        read_batches(stream, default_region="US", skip=0, batch_size=size, narrow_emails=True)
    )


def hold(uploader: Uploader, upload: batch_commit.ClaimedUpload, items: Iterator[Any]) -> None:
    batch_commit.apply_until_checked(
        uploader.app.state.sessionmaker,
        uploader.settings,
        upload,
        items,
        reclassify_customers,
        True,
    )


@on_postgres
def test_held_batches_commit_when_the_check_passes(uploader: Uploader) -> None:
    records = people(300)
    upload = claimed(uploader, records)
    first, second, third = batches_of(records, 100)
    rest = iter([first, second, reader_process.FILE_CHECKED, third])
    hold(uploader, upload, rest)
    assert next(rest) is third  # the batches after the verdict are the caller's
    assert stored(uploader) == 200
    assert upload.records_committed == 200
    row = uploader.session.get(Upload, upload.id)
    assert row is not None and row.records_committed == 200 and row.created == 200


@on_postgres
def test_held_batches_are_rolled_back_when_the_check_fails(uploader: Uploader) -> None:
    records = people(300)
    upload = claimed(uploader, records)
    lease = upload.lease_until

    def fault_after_two() -> Iterator[Any]:
        yield from batches_of(records, 100)[:2]
        raise UploadFileInvalid("the file ends before its array is closed")

    with pytest.raises(UploadFileInvalid):
        hold(uploader, upload, fault_after_two())
    assert stored(uploader) == 0
    assert (upload.records_committed, upload.lease_until) == (0, lease)
    uploader.session.expire_all()
    row = uploader.session.get(Upload, upload.id)
    assert row is not None and row.records_committed == 0 and row.lease_until == lease


@on_postgres
def test_a_held_batch_meeting_another_writer_rolls_every_held_batch_back(
    uploader: Uploader,
) -> None:
    """An order created the customer of record 150 after the claim: its batch collides
    (the emails of a first upload were not looked up), and the batch before it goes too."""
    records = people(300)
    upload = claimed(uploader, records)
    with uploader.app.state.sessionmaker() as other, other.begin():
        other.add(
            Customer(
                profile_id=uploader.connected.profile.id, email="p150@example.com", first_name="Ora"
            )
        )
    with pytest.raises(batch_commit.HeldBatchCollided):
        hold(uploader, upload, iter(batches_of(records, 100)))
    assert stored(uploader) == 1  # the order's customer alone
    assert upload.records_committed == 0


@on_postgres
def test_an_invalid_file_applies_nothing(uploader: Uploader, reading: list[bool]) -> None:
    body = json.dumps(people(RECORDS)).encode()[:-1]  # no closing bracket
    status = uploader.ingest(body)
    assert status["status"] == "failed"
    assert (status["records"], status["created"], status["rejected"]) == (0, 0, 0)
    assert stored(uploader) == 0
    assert reading == [True]


@on_postgres
def test_a_valid_file_ends_as_if_checked_first(uploader: Uploader, reading: list[bool]) -> None:
    records = people(RECORDS)
    records[7] = {"email": "not an email"}  # a rejected record, reported with its index
    status = uploader.ingest(records)
    assert status["status"] == "done", status
    assert (status["records"], status["created"], status["rejected"]) == (
        RECORDS,
        RECORDS - 1,
        1,
    )
    assert status["errors"] == [
        {"index": 7, "reason": "email is invalid and there is no phoneNumber"}
    ]
    assert stored(uploader) == RECORDS - 1
    assert reading == [True]


@on_postgres
def test_an_upload_meeting_another_writer_ends_with_one_customer_each(
    uploader: Uploader, reading: list[bool], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An order creates the customer of record 50 once the upload is claimed into an empty
    profile. Whether its batch was held (then the file is read again, checked first) or
    committed on its own (then retried with every look-up), the order's customer takes
    the file's phone and nobody is stored twice."""
    claim_upload = ingest.claim_upload
    profile_id = uploader.connected.profile.id

    def claim_then_an_order_writes(*args: Any, **kwargs: Any) -> Any:
        upload = claim_upload(*args, **kwargs)
        if upload is not None:
            with uploader.app.state.sessionmaker() as other, other.begin():
                other.add(
                    Customer(profile_id=profile_id, email="p50@example.com", first_name="Ora")
                )
        return upload

    monkeypatch.setattr(tasks, "claim_upload", claim_then_an_order_writes)
    status = uploader.ingest(people(RECORDS))
    assert status["status"] == "done", status
    assert reading in ([True], [True, False])
    assert (status["records"], status["created"], status["unchanged"] + status["updated"]) == (
        RECORDS,
        RECORDS - 1,
        1,
    )
    assert stored(uploader) == RECORDS
    uploader.session.expire_all()
    ora = uploader.session.scalars(
        select(Customer).where(
            Customer.profile_id == profile_id, Customer.email == "p50@example.com"
        )
    ).one()
    assert (ora.first_name, ora.phone_number) == ("Ora", people(51)[50]["phoneNumber"])


class _HeldBack(io.BytesIO):
    """A file whose reads wait until `release` is set."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.release = threading.Event()

    def read(self, size: int | None = -1) -> bytes:
        assert self.release.wait(10)
        return super().read(size)


@pytest.mark.parametrize("valid", [True, False])
def test_no_more_than_the_held_limit_is_sent_before_the_verdict(
    monkeypatch: pytest.MonkeyPatch, valid: bool
) -> None:
    monkeypatch.setattr(reader_process, "HELD_BATCHES_MAX", 2)
    data = json.dumps(people(10)).encode()
    if not valid:
        data = data[:-1]
    slow = _HeldBack(data)
    check = reader_process._CheckThread(slow)
    received, sender = Pipe(duplex=False)
    batches = read_batches(io.BytesIO(data), default_region="US", skip=0, batch_size=1)
    failure: list[BaseException] = []

    def send() -> None:
        try:
            reader_process._send_beside_check(batches, check, sender)
        except UploadFileInvalid as error:
            failure.append(error)
        finally:
            sender.close()

    sending = threading.Thread(target=send)
    sending.start()
    try:
        assert [received.recv()[0] for _ in range(2)] == ["batch", "batch"]
        assert not received.poll(0.3)  # the third batch waits for the check
        slow.release.set()
        messages = []
        while True:
            try:
                messages.append(received.recv()[0])
            except EOFError:
                break
    finally:
        slow.release.set()
        sending.join(10)
    if valid:
        assert messages == ["checked"] + ["batch"] * 8
        assert not failure
    else:
        assert messages == []
        assert len(failure) == 1
