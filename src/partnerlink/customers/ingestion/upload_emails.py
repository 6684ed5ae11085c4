"""Which emails an upload's earlier batches wrote, remembered approximately, so that a
first upload looks up only the emails it may already have stored.

On a profile that had no customers when its upload began, a batch's email look-up
(one index probe a key, ~1.6 s of PostgreSQL's time at 1,000,000 records) finds only
what the upload's own earlier batches wrote, or what another writer (an order, another
upload) created meanwhile. The first kind is remembered here; the second needs no
look-up to be safe: every record's email is written by its batch (created, or set on
the customer it matches), so a customer that already holds it makes the batch collide
with `uq_customers_email_profile`, and the batch is rolled back and planned again with
every look-up (batch_commit.commit_batch). Correctness rests on that unique key; this
filter only spares look-ups, and a wrong "maybe" costs one. The reader keeps one per
reading of the file (reader.read_batches), in the reader process for a large file.

A bitmap of 2**25 bits (4 MiB) indexed by the email's hash: no email written is ever
forgotten (no false "no"); after 1,000,000 distinct emails about 3% of new ones read
"maybe" and are looked up.
"""

from __future__ import annotations

from collections.abc import Iterable

_BITS = 1 << 25
_MASK = _BITS - 1


class EmailsWritten:
    """A Bloom filter with one hash function over the emails an upload wrote."""

    def __init__(self) -> None:
        self._bits = bytearray(_BITS // 8)

    def add(self, emails: Iterable[str]) -> None:
        bits = self._bits
        for email in emails:
            slot = hash(email) & _MASK
            bits[slot >> 3] |= 1 << (slot & 7)

    def maybe_written(self, emails: Iterable[str]) -> set[str]:
        """The emails that may have been written (each written one among them)."""
        bits = self._bits
        return {
            email
            for email in emails
            if bits[(slot := hash(email) & _MASK) >> 3] & (1 << (slot & 7))
        }
