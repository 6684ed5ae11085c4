"""resolve_customers reads a batch's look-ups ahead: no look-up costs a round trip of its own."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy.orm import Session

from partnerlink.customers import service
from partnerlink.customers.service import normalize_fields
from partnerlink.db.raw import Sql, Statement
from tests.factories import create_merchant_account, create_profile

LOOK_UPS = {service._BY_EMAIL, service._BY_PHONE, service._PHONE_ONLY}


class RecordingSql(Sql):
    """The real Sql on the test's connection, noting each statement run on its own."""

    __slots__ = ("alone",)

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
