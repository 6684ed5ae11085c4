"""CONTRACT.md §6's matching rule, written once.

With an email: the customer with that email; else the phone-only customer
(no email) with that phone, which then takes the email; else a new customer.
Without an email: by phone, the phone-only customer first, else the oldest
with that phone. Non-empty incoming fields overwrite stored ones
(`MERGED_COLUMNS`; None means "not given").

Two look-up back-ends follow the same steps: SQL statements for single
records and order batches (service.py, queries.py), and in-memory indexes for
a whole ingestion batch (merge.py).
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from typing import TypeVar

# The columns a record carries and merges, in this order everywhere (records, SQL).
MERGED_COLUMNS = (
    "email",
    "phone_number",
    "first_name",
    "last_name",
    "city",
    "country_code",
    "postal_code",
)
# What touches match a customer by: a change re-keys the customer for measurement.
KEY_COLUMNS = frozenset({"email", "phone_number"})


class LookUp(Enum):
    BY_EMAIL = "by email"
    PHONE_ONLY = "the phone-only customer with this phone"
    BY_PHONE = "by phone: the phone-only customer, else the oldest"


def rule_steps(email: str | None, phone: str | None) -> list[tuple[LookUp, str]]:
    """The look-ups the rule asks for a record, in order; each is asked only when those
    before it found no one. Empty: the record is anonymous."""
    steps: list[tuple[LookUp, str]] = []
    find_match(lambda look_up, value: steps.append((look_up, value)), email, phone)
    return steps


Found = TypeVar("Found")


def find_match(
    find: Callable[[LookUp, str], Found | None], email: str | None, phone: str | None
) -> Found | None:
    """The customer the rule matches, through the back-end's `find`; None: create one.
    (Written out rather than looping over rule_steps: ingestion asks it for every record.)"""
    if email is None:
        return None if phone is None else find(LookUp.BY_PHONE, phone)
    found = find(LookUp.BY_EMAIL, email)
    if found is None and phone is not None:
        found = find(LookUp.PHONE_ONLY, phone)
    return found
