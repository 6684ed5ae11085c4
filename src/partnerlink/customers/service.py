"""Customer matching and merging for single records (orders) and the customer listing.

CONTRACT.md §6's matching rule (matching.py) with SQL look-ups (queries.py);
bulk ingestion (`ingest.py`, `batch_apply.py`, `merge.py`) applies the same rule batch-wise, in
memory.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal

from sqlalchemy.orm import Session

from partnerlink.customers.matching import (
    KEY_COLUMNS,
    MERGED_COLUMNS,
    LookUp,
    find_match,
    rule_steps,
)
from partnerlink.customers.models import Customer
from partnerlink.customers.normalize import (
    normalize_country_code,
    normalize_email,
    normalize_phone,
    normalize_postal_code,
    normalize_text,
)
from partnerlink.customers.queries import (
    INSERT_ONE,
    LOOK_UPS,
    MERGE_ONE,
    TAKE_OVER_PHONE_ONLY,
)
from partnerlink.db.base import utcnow
from partnerlink.db.raw import Sql, as_sql
from partnerlink.db.sets import LookUpAtOnce


@dataclass(frozen=True, slots=True)
class CustomerFields:
    """One normalized incoming record; None means "not given" (never overwrites)."""

    email: str | None
    phone_number: str | None
    first_name: str | None = None
    last_name: str | None = None
    city: str | None = None
    country_code: str | None = None
    postal_code: str | None = None

    def match_keys(self) -> list[str]:
        """What the matching rule matches this record by: its email and phone, where given."""
        return [value for value in (self.email, self.phone_number) if value is not None]

    def changes_for(self, stored: CustomerRecord | Customer | dict[str, Any]) -> dict[str, str]:
        """The columns this record would change on a stored customer."""
        get = stored.get if isinstance(stored, dict) else lambda k: getattr(stored, k)
        out: dict[str, str] = {}
        for column in MERGED_COLUMNS:
            value = getattr(self, column)
            if value is not None and get(column) != value:
                out[column] = value
        return out


CustomerChange = Literal["created", "updated", "unchanged"]


def normalize_fields(
    *,
    default_region: str | None,
    email: object,
    phone_number: object,
    first_name: object = None,
    last_name: object = None,
    city: object = None,
    country_code: object = None,
    postal_code: object = None,
) -> CustomerFields:
    """Normalizes one incoming record."""
    return CustomerFields(
        email=normalize_email(email),
        phone_number=normalize_phone(phone_number, default_region),
        first_name=normalize_text(first_name),
        last_name=normalize_text(last_name),
        city=normalize_text(city),
        country_code=normalize_country_code(country_code),
        postal_code=normalize_postal_code(postal_code),
    )


def resolve_customer(
    db: Session | Sql, *, profile_id: str, default_region: str | None, **record: object
) -> CustomerRecord | None:
    """Finds or creates the profile's customer for one record (`normalize_fields`'s
    fields); None when anonymous.

    Safe when two requests create the same customer at once: creation is an
    INSERT ... ON CONFLICT DO NOTHING on a unique key (email, or phone among
    customers without email), followed by a re-read of the winner.
    """
    fields = normalize_fields(default_region=default_region, **record)
    return resolve_customers(as_sql(db), [(profile_id, fields)])[0]


def resolve_customers(
    sql: Sql,
    records: Sequence[tuple[str, CustomerFields]],
    rekeyed: set[int] | None = None,
) -> list[CustomerRecord | None]:
    """`resolve_customer` for (profile, normalized record) pairs, in order, as one after another.

    The orders of a batch (orders/intake/pipeline.py) resolve their customers here: the
    look-ups are read ahead, all at once, before any record is applied (one
    round trip on PostgreSQL, not one per order), and each record then applies
    the matching rule against them, writing only when it creates or changes a
    customer. A record without email or phone is anonymous: None. `rekeyed`, when
    given, receives the ids of existing customers whose email or phone changed.
    """
    looked_up = _LookedUp(sql)
    looked_up.read_ahead(records)
    created = _create_newcomers(sql, records, looked_up)
    return [
        created[index]
        if index in created
        else None
        if fields.email is None and fields.phone_number is None
        else upsert_customer(
            sql, profile_id=profile_id, fields=fields, looked_up=looked_up, rekeyed=rekeyed
        )[0]
        for index, (profile_id, fields) in enumerate(records)
    ]


def _create_newcomers(
    sql: Sql, records: Sequence[tuple[str, CustomerFields]], looked_up: _LookedUp
) -> dict[int, CustomerRecord]:
    """Creates, in one statement batch, the customers of the records that match nobody and
    share no email or phone with any other record of the batch; answers them by position.

    Such a record's creation neither changes nor depends on what any other record
    does, so creating it ahead of the batch's other records gives the same customers
    as one after another (only the order of their ids differs), in one round trip on
    PostgreSQL instead of one each. One that loses a race (another transaction made
    the customer meanwhile) is left to the matching rule, which finds the winner.
    """
    uses: Counter[tuple[str, str]] = Counter()
    for profile_id, fields in records:
        uses.update((profile_id, value) for value in fields.match_keys())
    newcomers = [
        index
        for index, (profile_id, fields) in enumerate(records)
        if looked_up.matches_nobody(profile_id, fields)
        and all(uses[(profile_id, value)] == 1 for value in fields.match_keys())
    ]
    now = sql.time(utcnow())
    rows = sql.first_rows(
        INSERT_ONE,
        [{**_values(records[i][1]), "profile_id": records[i][0], "now": now} for i in newcomers],
    )
    created: dict[int, CustomerRecord] = {}
    for index, row in zip(newcomers, rows, strict=True):
        profile_id, fields = records[index]
        looked_up.forget(profile_id, fields)
        record = _record(row)
        if record is not None:
            created[index] = looked_up.wrote(profile_id, record)
    return created


@dataclass(frozen=True, slots=True)
class CustomerRecord:
    """A stored customer as matching hands it back (no ORM identity to keep in sync)."""

    id: int
    email: str | None
    phone_number: str | None
    first_name: str | None
    last_name: str | None
    city: str | None
    country_code: str | None
    postal_code: str | None


def upsert_customer(
    sql: Sql,
    *,
    profile_id: str,
    fields: CustomerFields,
    looked_up: _LookedUp | None = None,
    rekeyed: set[int] | None = None,
) -> tuple[CustomerRecord, CustomerChange]:
    """Applies one normalized record (with an email or a phone) by the matching rule.

    A lost race (another writer created or took the customer meanwhile) is
    resolved by matching again, against the winner's row. `looked_up` holds
    answers read ahead for a batch; what this record writes drops those it may
    have changed.
    """
    looked_up = looked_up or _LookedUp(sql)
    for _attempt in range(5):
        existing = find_match(
            partial(looked_up.find, profile_id=profile_id), fields.email, fields.phone_number
        )
        if existing is not None:
            changes = fields.changes_for(existing)
            if not changes:
                return existing, "unchanged"
            looked_up.forget(profile_id, existing, fields)
            merged = _merge(sql, existing, fields)
            if merged is not None:
                if rekeyed is not None and KEY_COLUMNS.intersection(changes):
                    rekeyed.add(merged.id)
                return looked_up.wrote(profile_id, merged), "updated"
            continue
        looked_up.forget(profile_id, fields)
        created = _insert_new(sql, profile_id=profile_id, fields=fields)
        if created is not None:
            return looked_up.wrote(profile_id, created), "created"
    raise RuntimeError("customer matching did not settle after concurrent changes")


# The same look-ups for many values in one statement (PostgreSQL, db/sets.py).
_LOOK_UPS_AT_ONCE = {
    look_up: LookUpAtOnce(statement.sqlite, dict.fromkeys(statement.postgresql_names, "text"))
    for look_up, statement in LOOK_UPS.items()
}
_UNREAD = object()  # a look-up not read ahead (None is an answer: nobody)


class _LookedUp:
    """The answers of the matching look-ups, read ahead for a batch and reused while valid.

    An answer for an email depends only on rows with that email, and one for a
    phone only on rows with that phone; so a write drops the answers for every
    email and phone the written row had or gets, and the next record that needs
    one reads it again (inside the same transaction, so it sees the write).
    """

    __slots__ = ("answers", "sql")

    def __init__(self, sql: Sql) -> None:
        self.sql = sql
        self.answers: dict[tuple[LookUp, str, str], CustomerRecord | None] = {}

    def read_ahead(self, records: Sequence[tuple[str, CustomerFields]]) -> None:
        """Reads the look-ups the records will ask, step by step (`_steps`), one statement
        a kind per step: each record's first, then, where that found no one, its next (a
        new customer's phone-only look-up), so none costs a round trip of its own."""
        pending = [asked for asked in (_steps(*record) for record in records) if asked]
        while pending:
            wanted: dict[LookUp, dict[tuple[str, str], None]] = {}
            for look_up, profile_id, value in (asked[0] for asked in pending):
                wanted.setdefault(look_up, {})[(profile_id, value)] = None
            for look_up, keys in wanted.items():
                params = [_lookup_params(look_up, profile_id, value) for profile_id, value in keys]
                rows = (
                    _LOOK_UPS_AT_ONCE[look_up].first_rows(self.sql, params)
                    if self.sql.postgres and len(params) > 1
                    else self.sql.first_rows(LOOK_UPS[look_up], params)
                )
                for (profile_id, value), row in zip(keys, rows, strict=True):
                    self.answers[(look_up, profile_id, value)] = _record(row)
            pending = [
                asked[1:] for asked in pending if asked[1:] and self.answers[asked[0]] is None
            ]

    def matches_nobody(self, profile_id: str, fields: CustomerFields) -> bool:
        """Whether the answers read ahead say the matching rule will create this record's
        customer (every look-up it would ask was read, and found no one)."""
        asked = _steps(profile_id, fields)
        return bool(asked) and all(self.answers.get(key, _UNREAD) is None for key in asked)

    def find(self, look_up: LookUp, value: str, *, profile_id: str) -> CustomerRecord | None:
        key = (look_up, profile_id, value)
        if key in self.answers:
            return self.answers[key]
        found = self.answers[key] = _record(
            self.sql.row(LOOK_UPS[look_up], _lookup_params(look_up, profile_id, value))
        )
        return found

    def wrote(self, profile_id: str, record: CustomerRecord) -> CustomerRecord:
        """The row as this transaction just wrote it is the answer for its (unique) email."""
        if record.email is not None:
            self.answers[(LookUp.BY_EMAIL, profile_id, record.email)] = record
        return record

    def forget(self, profile_id: str, *rows: CustomerFields | CustomerRecord) -> None:
        for row in rows:
            if row.email is not None:
                self.answers.pop((LookUp.BY_EMAIL, profile_id, row.email), None)
            if row.phone_number is not None:
                self.answers.pop((LookUp.BY_PHONE, profile_id, row.phone_number), None)
                self.answers.pop((LookUp.PHONE_ONLY, profile_id, row.phone_number), None)


def _lookup_params(look_up: LookUp, profile_id: str, value: str) -> dict[str, str]:
    key = "email" if look_up is LookUp.BY_EMAIL else "phone_number"
    return {"profile_id": profile_id, key: value}


def _record(row: Any) -> CustomerRecord | None:
    return None if row is None else CustomerRecord(*row)


def _steps(profile_id: str, fields: CustomerFields) -> list[tuple[LookUp, str, str]]:
    """The rule's look-ups for a record (matching.rule_steps), for this profile."""
    return [
        (look_up, profile_id, value)
        for look_up, value in rule_steps(fields.email, fields.phone_number)
    ]


def _merge(sql: Sql, customer: CustomerRecord, fields: CustomerFields) -> CustomerRecord | None:
    params = {**_values(fields), "id": customer.id, "now": sql.time(utcnow())}
    if fields.email is None or customer.email == fields.email:
        return _record(sql.row(MERGE_ONE, params))
    # Taking the email: only if nobody took this email meanwhile (unique key), else match again.
    try:
        with sql.savepoint("take_email"):
            taken = sql.row(TAKE_OVER_PHONE_ONLY, params)
    except sql.errors.IntegrityError:
        return None
    return _record(taken)


def _insert_new(sql: Sql, *, profile_id: str, fields: CustomerFields) -> CustomerRecord | None:
    params = {**_values(fields), "profile_id": profile_id, "now": sql.time(utcnow())}
    return _record(sql.row(INSERT_ONE, params))


def _values(fields: CustomerFields) -> dict[str, str | None]:
    return {column: getattr(fields, column) for column in MERGED_COLUMNS}
