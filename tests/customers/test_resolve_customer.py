"""Single-record matching (CONTRACT.md §6), as orders use it."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from partnerlink.customers.models import Customer
from partnerlink.customers.queries import count_customers
from partnerlink.customers.service import resolve_customer
from tests.factories import create_merchant_account, create_profile


def _profile_id(session: Session) -> str:
    return create_profile(session, create_merchant_account(session)).id


def _all(session: Session, profile_id: str) -> list[Customer]:
    return list(
        session.scalars(
            select(Customer).where(Customer.profile_id == profile_id).order_by(Customer.id)
        )
    )


def test_neither_email_nor_phone_is_anonymous(session: Session) -> None:
    pid = _profile_id(session)
    assert (
        resolve_customer(session, profile_id=pid, default_region="US", email="x", phone_number="1")
        is None
    )
    assert count_customers(session, profile_id=pid) == 0


def test_same_email_in_other_case_matches_the_same_customer(session: Session) -> None:
    pid = _profile_id(session)
    first = resolve_customer(
        session, profile_id=pid, default_region="US", email="Ann@X.com", phone_number=None
    )
    second = resolve_customer(
        session,
        profile_id=pid,
        default_region="US",
        email=" ann@x.COM ",
        phone_number=None,
        first_name="Ann",
    )
    assert first is not None and second is not None and first.id == second.id
    assert second.first_name == "Ann"
    assert count_customers(session, profile_id=pid) == 1


def test_phone_only_customer_takes_the_email(session: Session) -> None:
    pid = _profile_id(session)
    phone_only = resolve_customer(
        session, profile_id=pid, default_region="US", email=None, phone_number="(415) 555-2671"
    )
    with_email = resolve_customer(
        session, profile_id=pid, default_region="US", email="bob@x.com", phone_number="+14155552671"
    )
    assert phone_only is not None and with_email is not None
    assert phone_only.id == with_email.id
    assert with_email.email == "bob@x.com" and with_email.phone_number == "+14155552671"


def test_phone_of_a_customer_with_another_email_makes_a_new_customer(session: Session) -> None:
    pid = _profile_id(session)
    resolve_customer(
        session, profile_id=pid, default_region="US", email="a@x.com", phone_number="+14155552671"
    )
    other = resolve_customer(
        session, profile_id=pid, default_region="US", email="b@x.com", phone_number="+14155552671"
    )
    assert other is not None and other.email == "b@x.com"
    assert count_customers(session, profile_id=pid) == 2


def test_without_email_matches_by_phone(session: Session) -> None:
    pid = _profile_id(session)
    known = resolve_customer(
        session, profile_id=pid, default_region="DE", email="c@x.com", phone_number="0151 12345678"
    )
    by_phone = resolve_customer(
        session,
        profile_id=pid,
        default_region="DE",
        email=None,
        phone_number="+49 151 12345678",
        city="Berlin",
    )
    assert known is not None and by_phone is not None and by_phone.id == known.id
    assert by_phone.city == "Berlin" and by_phone.email == "c@x.com"


def test_empty_incoming_fields_do_not_overwrite(session: Session) -> None:
    pid = _profile_id(session)
    resolve_customer(
        session,
        profile_id=pid,
        default_region="US",
        email="d@x.com",
        phone_number=None,
        first_name="Dee",
        last_name="Doe",
    )
    again = resolve_customer(
        session,
        profile_id=pid,
        default_region="US",
        email="d@x.com",
        phone_number=None,
        first_name="",
        last_name=None,
    )
    assert again is not None and again.first_name == "Dee" and again.last_name == "Doe"


def test_invalid_email_with_valid_phone_counts_as_phone_only(session: Session) -> None:
    pid = _profile_id(session)
    customer = resolve_customer(
        session,
        profile_id=pid,
        default_region="US",
        email="not-an-email",
        phone_number="+14155552671",
    )
    assert (
        customer is not None and customer.email is None and customer.phone_number == "+14155552671"
    )
    session.commit()
    assert len(_all(session, pid)) == 1
