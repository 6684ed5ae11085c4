"""Customer files built to exhaust the worker fail at once, or lose only their bad records
(CONTRACT.md §12): nesting past 32 levels, values no customer field holds, memory bombs."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from partnerlink.customers.ingestion.json_stream import READ_BUFFER_BYTES, RECORD_FIELDS
from partnerlink.customers.models import Upload
from tests.customers.conftest import Uploader, counts

ANN = {"email": "ann@example.com", "firstName": "Ann"}


def nested(depth: int, inner: bytes = b"") -> bytes:
    """`depth` arrays, one inside the other."""
    return b"[" * depth + inner + b"]" * depth


def ingest_bytes(uploader: Uploader, body: bytes) -> dict[str, Any]:
    return uploader.ingest(body)


def attempts(uploader: Uploader, upload_id: str) -> int:
    value = uploader.session.scalar(select(Upload.attempts).where(Upload.id == upload_id))
    uploader.session.rollback()
    assert value is not None
    return value


def assert_failed_with_nothing_applied(uploader: Uploader, status: dict[str, Any]) -> None:
    assert status["status"] == "failed", status
    assert "nothing was applied" in status["reason"]
    assert counts(status) == (0, 0, 0, 0, 0)
    assert uploader.customers() == [("ann@example.com", None, "Ann", None, None, None)]
    assert attempts(uploader, status["uploadId"]) == 1  # a permanent fault is not retried


def test_a_file_nested_200000_deep_fails_at_once_naming_the_depth(uploader: Uploader) -> None:
    uploader.ingest([ANN])
    changes = b'{"email": "ann@example.com", "firstName": "Changed"}, {"email": "b@example.com"}'
    body = b"[" + changes + b", " + nested(199_999) + b"]"  # 200,000 levels with the file's
    assert 390_000 < len(body) < 410_000
    started = time.monotonic()
    status = ingest_bytes(uploader, body)
    # A bound against pathology (recursing or going quadratic would take minutes), not a
    # speed figure: generous enough for a machine busy with other work (bench/ times it).
    assert time.monotonic() - started < 30
    assert status["reason"] == (
        "element 2 nests deeper than 32 levels (the file's array is level 1); nothing was applied"
    )
    assert_failed_with_nothing_applied(uploader, status)


def test_32_levels_are_read_record_by_record_and_33_fail_the_file(uploader: Uploader) -> None:
    uploader.ingest([ANN])
    # The file's array, the record, then 30 more levels: 32 in all.
    deep_extra = b'{"email": "deep@example.com", "extra": ' + nested(29, b"{}") + b"}"
    deep_email = b'{"email": ' + nested(30) + b', "phoneNumber": "+14155552671"}'
    status = ingest_bytes(uploader, b"[" + deep_extra + b", " + deep_email + b"]")
    assert status["status"] == "done", status
    assert counts(status) == (2, 1, 0, 0, 1)
    assert status["errors"] == [{"index": 1, "reason": "email must be a string"}]

    too_deep = b'{"email": "deeper@example.com", "extra": ' + nested(30, b"{}") + b"}"
    failed = ingest_bytes(uploader, b"[" + too_deep + b"]")
    assert failed["status"] == "failed"
    assert "deeper than 32 levels" in failed["reason"]
    assert [row[0] for row in uploader.customers()] == ["ann@example.com", "deep@example.com"]


def test_values_an_order_would_refuse_reject_their_record_and_the_rest_applies(
    uploader: Uploader,
) -> None:
    body = (
        b"["
        b'{"email": "nul@example.com", "firstName": "Ann\\u0000"},'
        b'{"email": "lone@example.com", "lastName": "Lee\\ud800"},'
        b'{"email": "low@example.com", "city": "\\udc00x"},'
        b'{"email": "zz@example.com", "countryCode": "ZZ"},'
        b'{"email": "long@example.com", "city": "' + b"c" * 201 + b'"},'
        b'{"email": "ctl@example.com", "firstName": "a\\nb"},'
        b'{"email": "num@example.com", "phoneNumber": 14155552671},'
        b'{"email": "' + b"e" * 310 + b'@example.com"},'
        b'{"email": "ok@example.com", "firstName": "Zo\\u00eb \\ud83d\\ude00", '
        b'"lastName": "back\\\\ud800slash", "city": "' + b"c" * 200 + b'", "countryCode": "fr"}'
        b"]"
    )
    status = ingest_bytes(uploader, body)
    assert status["status"] == "done", status
    assert counts(status) == (9, 1, 0, 0, 8)
    printable = "must be printable text (no NUL, control character or lone surrogate)"
    assert status["errors"] == [
        {"index": 0, "reason": f"firstName {printable}"},
        {"index": 1, "reason": f"lastName {printable}"},
        {"index": 2, "reason": f"city {printable}"},
        {"index": 3, "reason": "countryCode must be an ISO 3166-1 alpha-2 country code, e.g. US"},
        {"index": 4, "reason": "city must be at most 200 characters"},
        {"index": 5, "reason": f"firstName {printable}"},
        {"index": 6, "reason": "phoneNumber must be a string"},
        {"index": 7, "reason": "email must be at most 320 characters"},
    ]
    assert uploader.customers() == [
        ("ok@example.com", None, "Zoë 😀", "back\\ud800slash", "c" * 200, "FR")
    ]


def test_escapes_cut_by_a_read_boundary_are_read_whole(uploader: Uploader) -> None:
    def record_at_boundary(offset: int, name: bytes, email: str) -> bytes:
        head = b'[{"email": "' + email.encode() + b'", "pad": "'
        pad = READ_BUFFER_BYTES - len(head) - len(b'", "firstName": "') - offset
        return head + b"p" * pad + b'", "firstName": "' + name + b'"}]'

    for offset in (1, 4, 6, 7, 11):
        pair = record_at_boundary(offset, b"\\ud83d\\ude00", f"pair{offset}@example.com")
        assert ingest_bytes(uploader, pair)["created"] == 1
        lone = record_at_boundary(offset, b"x\\ud800", f"lone{offset}@example.com")
        assert ingest_bytes(uploader, lone)["rejected"] == 1
    assert {row[2] for row in uploader.customers()} == {"😀"}


def test_an_over_large_record_is_rejected_and_the_rest_applies(uploader: Uploader) -> None:
    wide = {"email": "wide@example.com", **{f"k{n}": n for n in range(10_000)}}
    status = uploader.ingest([wide, {"email": "narrow@example.com"}])
    assert status["status"] == "done"
    assert counts(status) == (2, 1, 0, 0, 1)
    assert status["errors"] == [
        {"index": 0, "reason": "the record holds more than 10000 keys and values"}
    ]


@pytest.mark.parametrize(
    ("element", "reason"),
    [
        (b'{"email": "a@example.com", "n": 1' + b"0" * 5000 + b"}", "a number too large to read"),
        (b'{"email": "a@example.com", "n": 1e9999999999999999999999}', "a number too large"),
        (b'{"email": "a@example.com", "city": "\xed\xa0\x80"}', "text that is not valid UTF-8"),
        (b'{"email": "a@example.com", "x": "' + b"x" * (9 * 1024 * 1024) + b'"}', "8 MiB"),
        (b'{"email": "a@example.com", "x": ' + b"1" * (9 * 1024 * 1024) + b"}", "8 MiB"),
    ],
)
def test_a_value_no_customer_file_holds_fails_the_file_once(
    uploader: Uploader, element: bytes, reason: str
) -> None:
    uploader.ingest([ANN])
    body = b'[{"email": "ann@example.com", "firstName": "Changed"}, ' + element + b"]"
    status = ingest_bytes(uploader, body)
    assert reason in status["reason"]
    assert_failed_with_nothing_applied(uploader, status)


def test_blanks_between_values_are_not_a_long_value(uploader: Uploader) -> None:
    body = b'[{"email": "a@example.com"}' + b" " * (9 * 1024 * 1024) + b"]"
    assert ingest_bytes(uploader, body)["status"] == "done"


# Runs ingestion's reading (the same in the worker and in the reader process it starts for
# large files) over each file, and prints its peak memory (KiB) before the files (once a
# small file was read) and after them. Its address space is capped, so that a reader that
# explodes fails fast instead of taking the machine's memory.
_MEASURE = """
import io, resource, sys
from pathlib import Path
from partnerlink.customers.ingestion.reader import UploadFileInvalid, read_checked_batches

def read(stream):
    batches = read_checked_batches(
        stream, default_region="US", skip=0, batch_size=5000, keep_alive=lambda: None
    )
    try:
        sum(len(batch.rejections) for batch in batches)
    except UploadFileInvalid:
        pass

# VmHWM is this process image's own peak: ru_maxrss would also count the pytest worker
# this process was forked from, which Linux carries across fork and exec.
def peak():
    return next(line.split()[1] for line in open("/proc/self/status") if line.startswith("VmHWM:"))

cap = 1024 * 1024 * 1024
resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
read(io.BytesIO(b'[{"email": "a@example.com", "x": [1], "city": "\\ud83d\\ude00"}]'))
before = peak()
for path in sorted(Path(sys.argv[1]).glob("*.json")):
    with path.open("rb") as stream:
        read(stream)
print(before, peak())
"""


def _peak_kib(folder: Path) -> tuple[int, int]:
    """_MEASURE's peak memory (KiB) before and after reading the folder's files."""
    result = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(folder)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    before, after = map(int, result.stdout.split())
    return before, after


def test_reading_hostile_files_stays_within_300_mib(tmp_path: Path) -> None:
    mib = 1024 * 1024
    files = {
        "deep.json": nested(200_000),
        "deep-in-a-record.json": b'[{"email": "a@example.com", "x": ' + nested(400_000) + b"}]",
        "long-string.json": b'[{"email": "a@example.com", "city": "'
        + b"\xf0\x9f\x98\x80" * (3 * mib // 2)  # 6 MiB: read whole, refused by its limit
        + b'"}]',
        "many-keys.json": b"[{"
        + b",".join(b'"k%d": [[], {}]' % n for n in range(200_000))
        + b', "email": "a@example.com"}]',
        "many-records.json": json.dumps(
            [{"email": f"c{n}@example.com", "tags": [[], [], []]} for n in range(40_000)]
        ).encode(),
    }
    for name, body in files.items():
        (tmp_path / name).write_bytes(body)
    started = time.monotonic()
    assert _peak_kib(tmp_path)[1] < 300 * 1024
    assert time.monotonic() - started < 45  # a bound against pathology, as above


def test_wide_characters_do_not_widen_what_a_record_holds(tmp_path: Path) -> None:
    # One emoji makes CPython store every character of a str in 4 bytes: each field below
    # is 1 MiB in the file and 4 MiB as text. Seven such fields a record, a record
    # building while the one before is still held: 56 MiB held by reading a 14 MiB file
    # (scaled to a 176 MB file, over 600 MiB). A field over its limit is kept cut, so
    # reading holds one field's text at a time (CONTRACT.md §12: bounds in bytes).
    field = b'"\xf0\x9f\x98\x80' + b"A" * (1024 * 1024) + b'"'
    record = b"{" + b", ".join(b'"%s": %s' % (name.encode(), field) for name in RECORD_FIELDS)
    body = b"[" + record + b"}, " + record + b"}]"
    (tmp_path / "wide.json").write_bytes(body)
    before, after = _peak_kib(tmp_path)
    assert (after - before) * 1024 < len(body)
