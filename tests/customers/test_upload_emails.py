"""The approximate memory of a first upload's emails (customers/ingestion/upload_emails.py)."""

from __future__ import annotations

from partnerlink.customers.ingestion.upload_emails import EmailsWritten


def test_an_email_written_is_never_forgotten_and_few_others_read_maybe() -> None:
    written = [f"person{n}@example.com" for n in range(200_000)]
    others = [f"other{n}@example.org" for n in range(200_000)]
    emails = EmailsWritten()
    emails.add(written)
    assert emails.maybe_written(written) == set(written)
    # 200,000 emails set at most as many of the 2**25 bits (0.6%): about 0.6% of others
    # read "maybe" (1,200 of 200,000, give or take 35), and never 1%.
    assert len(emails.maybe_written(others)) < 0.01 * len(others)


def test_an_empty_filter_holds_nothing() -> None:
    assert EmailsWritten().maybe_written({"a@example.com", "b@example.com"}) == set()
