"""Generated customer files for the tests."""

from __future__ import annotations

import json
from collections.abc import Iterator


def numbered_records(count: int) -> Iterator[bytes]:
    """A JSON array, chunk by chunk: every 10th record repeats an earlier one."""
    yield b"["
    for i in range(count):
        n = i - 5 if i % 10 == 9 else i
        record = {
            "email": f"user{n}@example.com",
            "phoneNumber": f"+1415{n:07d}",
            "firstName": "Customer",
            "lastName": f"Number {n}",
            "city": "Springfield",
            "countryCode": "US",
        }
        yield (b"," if i else b"") + json.dumps(record).encode()
    yield b"]"


def distinct_in(count: int) -> int:
    return sum(1 for i in range(count) if i % 10 != 9)
