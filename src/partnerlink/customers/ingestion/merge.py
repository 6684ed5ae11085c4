"""The matching rule of CONTRACT.md §6 (matching.py) applied to a whole batch of records,
in memory.

Ingestion loads, in one or two queries, every stored customer a batch could
match (by its emails and phones), then plans the batch here without touching
the database: which customers to create, which to update. Records are applied
in file order, exactly as one-by-one matching would, so later non-empty
fields win.

Counting collapses duplicates: a customer touched by several records of a
batch counts once, on its first record — `created` if the batch created it,
`updated` if its stored values differ at the end of the batch, else
`unchanged` — and every further record of the same customer counts
`unchanged`. So re-sending a list reports everything unchanged, even when the
list holds conflicting duplicates (within one batch; see ingest.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import repeat

from partnerlink.customers.matching import LookUp, find_match

# Positions in a normalized record and in Entity.values (same order as MERGED_COLUMNS).
EMAIL, PHONE = 0, 1

# (email, phone_number, first_name, last_name, city, country_code, postal_code);
# None = not given.
NormalizedRecord = tuple[
    str | None, str | None, str | None, str | None, str | None, str | None, str | None
]
# (id, email, phone_number, first_name, last_name, city, country_code, postal_code) as stored.
StoredRow = tuple[
    int, str | None, str | None, str | None, str | None, str | None, str | None, str | None
]

_NEW_SEQUENCE_START = 1 << 62  # new customers sort after every stored one ("oldest" = lowest)


@dataclass(eq=False, slots=True)
class Entity:
    """A customer as the batch sees it: stored (with id) or created by the batch."""

    id: int | None
    seq: int
    values: Sequence[str | None]  # a list while the batch may still change it
    initial: tuple[str | None, ...] | None  # None: created by this batch
    # A new customer's row in COPY's text format, rendered by the reader (see plan_batch).
    copy_line: str | None = None

    @property
    def changed(self) -> bool:
        return self.initial is not None and tuple(self.values) != self.initial

    @property
    def rekeyed(self) -> bool:
        """A stored customer whose email or phone changed: ad touches may match it anew."""
        return self.initial is not None and (
            self.values[EMAIL] != self.initial[EMAIL] or self.values[PHONE] != self.initial[PHONE]
        )


@dataclass
class BatchPlan:
    inserts: list[Entity] = field(default_factory=list)
    updates: list[Entity] = field(default_factory=list)
    created: int = 0
    updated: int = 0
    unchanged: int = 0


_BY_EMAIL, _BY_PHONE = LookUp.BY_EMAIL, LookUp.BY_PHONE


class _Workspace:
    """The batch's customers, indexed the way the rule looks them up.

    Ingestion plans every record of a file here (a few µs each): the loops bind
    what they use to locals.
    """

    def __init__(self, stored: Iterable[StoredRow]) -> None:
        self.by_email: dict[str, Entity] = {}
        self.phone_only: dict[str, Entity] = {}  # customers without email, by phone
        self.with_email_by_phone: dict[str, list[Entity]] = {}
        self._next_seq = _NEW_SEQUENCE_START
        index = self._index
        for row in stored:
            initial = tuple(row[1:])
            index(Entity(id=row[0], seq=row[0], values=list(initial), initial=initial))

    def match(self, record: NormalizedRecord) -> Entity | None:
        return find_match(self.find, record[EMAIL], record[PHONE])

    def find(self, look_up: LookUp, value: str) -> Entity | None:
        """One of the rule's look-ups (matching.py), answered from the batch's indexes."""
        if look_up is _BY_EMAIL:
            return self.by_email.get(value)
        found = self.phone_only.get(value)
        if found is None and look_up is _BY_PHONE:
            candidates = self.with_email_by_phone.get(value)
            if candidates:
                found = min(candidates, key=lambda entity: entity.seq)  # the oldest
        return found

    def create(self, record: NormalizedRecord) -> Entity:
        self._next_seq += 1
        entity = Entity(id=None, seq=self._next_seq, values=list(record), initial=None)
        self._index(entity)
        return entity

    def apply(self, entity: Entity, record: NormalizedRecord) -> None:
        """Non-empty incoming fields overwrite stored ones."""
        values = entity.values
        email, phone = record[EMAIL], record[PHONE]
        rekey = (email is not None and email != values[EMAIL]) or (
            phone is not None and phone != values[PHONE]
        )
        if rekey:
            self._unindex(entity)
        entity.values = [
            old if new is None else new for new, old in zip(record, values, strict=True)
        ]
        if rekey:
            self._index(entity)

    def _index(self, entity: Entity) -> None:
        email, phone = entity.values[EMAIL], entity.values[PHONE]
        if email is not None:
            self.by_email[email] = entity
            if phone is not None:
                same_phone = self.with_email_by_phone.get(phone)
                if same_phone is None:
                    self.with_email_by_phone[phone] = [entity]
                else:
                    same_phone.append(entity)
        elif phone is not None:
            self.phone_only[phone] = entity

    def _unindex(self, entity: Entity) -> None:
        email, phone = entity.values[EMAIL], entity.values[PHONE]
        if email is not None:
            if self.by_email.get(email) is entity:
                del self.by_email[email]
            if phone is not None:
                same_phone = self.with_email_by_phone.get(phone, [])
                if entity in same_phone:
                    same_phone.remove(entity)
        elif phone is not None and self.phone_only.get(phone) is entity:
            del self.phone_only[phone]


def plan_batch(
    records: Sequence[NormalizedRecord],
    stored: Iterable[StoredRow],
    singles: Sequence[bool] | None = None,
    copy_lines: Sequence[str | None] | None = None,
) -> BatchPlan:
    """Plans a batch of valid records (each with an email or a phone) against stored rows.

    `singles` (from the reader) marks the records whose email and phone no other record
    of the batch holds. One that matches no stored customer either is created as it is
    and never looked up again in this batch: it is not indexed (the most common record
    of a first upload; measured, the indexing was most of the planning), and its row in
    COPY's text format comes from `copy_lines` when the reader rendered it.
    """
    workspace = _Workspace(stored)
    match, create, apply = workspace.match, workspace.create, workspace.apply
    touched: dict[Entity, None] = {}
    plan = BatchPlan()
    repeated = 0
    by_email, phone_only, with_email_by_phone = (
        workspace.by_email,
        workspace.phone_only,
        workspace.with_email_by_phone,
    )
    alone = singles if singles is not None else repeat(False)
    lines = copy_lines if copy_lines is not None else repeat(None)
    for record, single, line in zip(records, alone, lines, strict=False):
        email, phone = record[EMAIL], record[PHONE]
        if (email is None or email not in by_email) and (
            phone is None or (phone not in phone_only and phone not in with_email_by_phone)
        ):
            # No index holds the record's email or phone: whatever the rule looks up misses.
            if single:  # and no later record of the batch looks it up
                touched[Entity(None, _NEW_SEQUENCE_START, record, None, line)] = None
            else:
                touched[create(record)] = None
            continue
        entity = match(record)
        if entity is None:
            entity = create(record)
        else:
            apply(entity, record)
        if entity in touched:
            repeated += 1  # collapsed into the customer's first record of the batch
        else:
            touched[entity] = None
    plan.unchanged = repeated
    for entity in touched:
        if entity.initial is None:
            plan.inserts.append(entity)
        elif entity.changed:
            plan.updates.append(entity)
        else:
            plan.unchanged += 1
    plan.created, plan.updated = len(plan.inserts), len(plan.updates)
    return plan
