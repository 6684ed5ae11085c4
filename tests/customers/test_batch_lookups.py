"""resolve_customers reads a batch's look-ups ahead: no look-up costs a round trip of its own."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy.orm import Session

from partnerlink.customers import queries, service
from partnerlink.customers.service import normalize_fields
from partnerlink.db.raw import Sql, Statement
from tests.factories import create_merchant_account, create_profile

LOOK_UPS = set(queries.LOOK_UPS.values())


class RecordingSql(Sql):
    """The real Sql on the test's connection, noting each statement run on its own."""

    __slots__ = ("alone",)
    alone: list[Statement]

    def row(self, statement: Statement, params: Mapping[str, Any]) -> Any:
        self.alone.append(statement)
        return super().row(statement, params)


def _recording(session: Session) -> RecordingSql:
    sql = RecordingSql.of_session(session)
    assert isinstance(sql, RecordingSql)
    sql.alone = []
    return sql


def test_new_customers_and_a_phone_only_take_over_need_no_single_look_up(
    session: Session,
) -> None:
    pid = create_profile(session, create_merchant_account(session)).id
    phone_only = service.resolve_customers(
        Sql.of_session(session),
        [(pid, normalize_fields(default_region="US", email=None, phone_number="+14155550101"))],
    )[0]
    assert phone_only is not None and phone_only.email is None

    sql = _recording(session)
    batch = [
        # Takes over the phone-only customer: its email is new, its phone known.
        (pid, normalize_fields(default_region="US", email="a@x.com", phone_number="4155550101")),
        # Nobody has this email or this phone: created.
        (pid, normalize_fields(default_region="US", email="b@x.com", phone_number="+14155550102")),
        # The customer the batch's first record just made: matched, not created again.
        (
            pid,
            normalize_fields(
                default_region="US", email="a@x.com", phone_number=None, first_name="Ann"
            ),
        ),
    ]
    taken, created, again = service.resolve_customers(sql, batch)

    assert taken is not None and taken.id == phone_only.id and taken.email == "a@x.com"
    assert created is not None and created.id != phone_only.id
    assert again is not None and again.id == phone_only.id and again.first_name == "Ann"
    assert [s for s in sql.alone if s in LOOK_UPS] == []


def test_unrelated_newcomers_are_created_together_and_shared_keys_one_after_another(
    session: Session,
) -> None:
    pid = create_profile(session, create_merchant_account(session)).id
    sql = _recording(session)
    batch = [
        (pid, normalize_fields(default_region="US", email="c@x.com", phone_number="+14155550103")),
        (pid, normalize_fields(default_region="US", email="d@x.com", phone_number=None)),
        (pid, normalize_fields(default_region="US", email=None, phone_number="+14155550104")),
        # Two records of one new customer: the first creates it, the second matches it.
        (pid, normalize_fields(default_region="US", email="e@x.com", phone_number="+14155550105")),
        (pid, normalize_fields(default_region="US", email="e@x.com", phone_number=None)),
    ]
    c, d, phone, e_first, e_again = service.resolve_customers(sql, batch)

    assert c is not None and (c.email, c.phone_number) == ("c@x.com", "+14155550103")
    assert d is not None and d.email == "d@x.com"
    assert phone is not None and (phone.email, phone.phone_number) == (None, "+14155550104")
    assert e_first is not None and e_again is not None and e_first.id == e_again.id
    assert len({c.id, d.id, phone.id, e_first.id}) == 4
    # The three unrelated newcomers went in one statement batch; only "e" was made alone.
    assert sql.alone.count(queries.INSERT_ONE) == 1
    assert [s for s in sql.alone if s in LOOK_UPS] == []


def test_a_newcomer_made_meanwhile_by_another_transaction_is_matched_not_duplicated(
    session: Session,
) -> None:
    pid = create_profile(session, create_merchant_account(session)).id
    fields = normalize_fields(default_region="US", email="f@x.com", phone_number="+14155550106")
    sql = Sql.of_session(session)
    looked_up = service._LookedUp(sql)
    looked_up.read_ahead([(pid, fields)])  # nobody has f@x.com yet...
    winner = service.resolve_customers(sql, [(pid, fields)])[0]  # ...then someone makes it
    assert winner is not None

    # The stale answers still say "nobody": the insert finds the winner's row, and the
    # matching rule takes over from there.
    created = service._create_newcomers(sql, [(pid, fields)], looked_up)
    assert created == {}
    again = service.upsert_customer(sql, profile_id=pid, fields=fields, looked_up=looked_up)
    assert again == (winner, "unchanged")


def test_newcomers_made_together_answer_each_record_and_skip_those_made_meanwhile(
    session: Session,
) -> None:
    """Several newcomers created together: each created row goes back to its own record; a
    record whose customer another transaction made meanwhile gets none, and is left to the
    matching rule."""
    pid = create_profile(session, create_merchant_account(session)).id
    batch = [
        (pid, normalize_fields(default_region="US", email="g@x.com", phone_number="+14155550107")),
        (pid, normalize_fields(default_region="US", email="h@x.com", phone_number=None)),
        (pid, normalize_fields(default_region="US", email=None, phone_number="+14155550108")),
        (pid, normalize_fields(default_region="US", email=None, phone_number="+14155550109")),
        (pid, normalize_fields(default_region="US", email="i@x.com", phone_number="+14155550110")),
    ]
    sql = Sql.of_session(session)
    looked_up = service._LookedUp(sql)
    looked_up.read_ahead(batch)  # nobody has any of them yet...
    made_meanwhile = service.resolve_customers(sql, [batch[1], batch[3]])  # ...then two are made

    created = service._create_newcomers(sql, batch, looked_up)

    assert sorted(created) == [0, 2, 4]
    for index, record in created.items():
        fields = batch[index][1]
        assert (record.email, record.phone_number) == (fields.email, fields.phone_number)
    assert len({record.id for record in created.values()}) == 3
    assert {record.id for record in created.values()}.isdisjoint(
        {one.id for one in made_meanwhile if one is not None}
    )
