"""Drill: hostile customer files of a given size through ingestion's reading, peak memory each.

    .venv/bin/python bench/customers_hostile.py [--mib 256]

Writes files built to exhaust a reader (nesting, one long string, a record of many
keys, many nested empty containers, many small records, records of wide text), then
reads each with `read_checked_batches` (what the worker and its reader process run)
in a fresh process whose address space is capped at 1 GiB, and prints its time,
outcome and peak resident memory. CONTRACT.md §12 bounds the last at 300 MiB for any file
within PARTNERLINK_MAX_UPLOAD_BYTES.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from partnerlink.customers.ingestion.json_stream import RECORD_FIELDS

_READ = """
import resource, sys
from partnerlink.customers.ingestion.reader import UploadFileInvalid, read_checked_batches

cap = 1024 * 1024 * 1024
resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
outcome = "done"
with open(sys.argv[1], "rb") as stream:
    try:
        batches = read_checked_batches(
            stream, default_region="US", skip=0, batch_size=5000, keep_alive=lambda: None
        )
        rejected = sum(len(batch.rejections) for batch in batches)
        outcome = f"done, {rejected} rejected"
    except UploadFileInvalid as error:
        outcome = f"failed: {error}"
# VmHWM is this process image's own peak: ru_maxrss would also count this drill's own,
# which Linux carries across fork and exec (every file showed the drill's 192 MiB).
peak = next(line.split()[1] for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(peak, outcome)
"""


def _repeat(size: int, head: bytes, unit: bytes, tail: bytes) -> Iterator[bytes]:
    yield head
    count = max(0, (size - len(head) - len(tail)) // len(unit))
    block = unit * max(1, 65536 // len(unit))
    per_block = 65536 // len(unit) or 1
    for _ in range(count // per_block):
        yield block
    yield unit * (count % per_block)
    yield tail


def hostile_files(size: int) -> dict[str, Callable[[], Iterator[bytes]]]:
    half = size // 2
    return {
        "deep-nesting": lambda: iter([b"[" * half, b"]" * half]),
        "long-string": lambda: _repeat(size, b'[{"email": "a@example.com", "x": "', b"x", b'"}]'),
        "many-keys": lambda: _repeat(
            size, b'[{"email": "a@example.com"', b', "k": [[], {}]', b"}]"
        ),
        "empty-containers": lambda: _repeat(
            size, b'[{"email": "a@example.com", "x": [', b"[[]], ", b"[]]}]"
        ),
        "small-records": lambda: _repeat(size, b"[{}", b', {"x": [[], {}]}', b"]"),
        "wide-fields": lambda: _repeat(size, b"[", _wide_record(), b"{}]"),
    }


def _wide_record() -> bytes:
    """Every field of a record an emoji and 8 MiB of ASCII (less a read, so that no read's
    alignment makes it too long a value): the emoji makes CPython store each character of
    the str in 4 bytes."""
    field = b'"\xf0\x9f\x98\x80' + b"A" * (8 * 2**20 - 2**18) + b'"'
    return (
        b"{" + b", ".join(b'"%s": %s' % (name.encode(), field) for name in RECORD_FIELDS) + b"}, "
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=256)
    args = parser.parse_args()
    size = args.mib * 1024 * 1024
    with tempfile.TemporaryDirectory() as directory:
        for name, chunks in hostile_files(size).items():
            path = Path(directory) / f"{name}.json"
            with path.open("wb") as out:
                for chunk in chunks():
                    out.write(chunk)
            started = time.monotonic()
            result = subprocess.run(
                [sys.executable, "-c", _READ, str(path)],
                capture_output=True,
                text=True,
                check=False,
            )
            seconds = time.monotonic() - started
            if result.returncode != 0:
                print(f"{name}: exit {result.returncode}: {result.stderr.strip()[-300:]}")
                continue
            peak_kib, outcome = result.stdout.split(" ", 1)
            print(
                f"{name:18} {path.stat().st_size / 2**20:6.0f} MiB  {seconds:6.1f} s  "
                f"peak {int(peak_kib) / 1024:5.0f} MiB  {outcome.strip()[:90]}"
            )
            path.unlink()


if __name__ == "__main__":
    main()
