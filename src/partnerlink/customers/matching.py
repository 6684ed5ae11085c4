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
    if email is None:
        return [] if phone is None else [(LookUp.BY_PHONE, phone)]
    steps = [(LookUp.BY_EMAIL, email)]
    if phone is not None:
        steps.append((LookUp.PHONE_ONLY, phone))
    return steps


Found = TypeVar("Found")


def find_match(
    find: Callable[[LookUp, str], Found | None], email: str | None, phone: str | None
) -> Found | None:
    """The customer the rule matches, through the back-end's `find`; None: create one."""
    for look_up, value in rule_steps(email, phone):
        found = find(look_up, value)
        if found is not None:
            return found
    return None
