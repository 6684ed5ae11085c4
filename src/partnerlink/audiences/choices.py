"""Customers' choices (CONTRACT §8, §12): opt-out and its lifting, STOP and START, erasure.

Services never commit: the request's session dependency does. An opt-out records who
asked for it: the merchant (`by_merchant`) or the phone's SMS STOP (`by_stop`); each
lifts only its own, and the customer is exported again once neither holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Text, cast, delete, func, or_, select, update
from sqlalchemy.orm import Session

from partnerlink.audiences import queries, scrub
from partnerlink.audiences.hashing import google_phone, normalized_email
from partnerlink.audiences.models import DIGEST_OF_VALUE, OptOut, Suppression
from partnerlink.audiences.stored_sizes import forget
from partnerlink.customers.models import Customer
from partnerlink.customers.normalize import normalize_email, normalize_phone
from partnerlink.db.base import insert_new, utcnow
from partnerlink.kit.digests import sha256_hex
from partnerlink.orders.models import Order
from partnerlink.orders.touches import erase_touches
from partnerlink.problems import ValidationFailed
from partnerlink.receipts.models import Receipt
from partnerlink.security.identifier_digests import identifier_digest
from partnerlink.stores.models import Store

BY_MERCHANT, BY_STOP = "by_merchant", "by_stop"
_BATCH = 1000


class MissingIdentifier(ValidationFailed):
    code = "missing_field"
    detail = "Give an email or a phoneNumber."


@dataclass(frozen=True)
class Person:
    email: str | None
    phone: str | None


def profile_region(session: Session, profile_id: str) -> str | None:
    """The country a national phone number of this profile is read in (a store's)."""
    return session.scalars(
        select(Store.country_code)
        .where(Store.profile_id == profile_id, Store.country_code.is_not(None))
        .limit(1)
    ).first()


def person(session: Session, profile_id: str, email: str | None, phone: str | None) -> Person:
    """The normalized identifiers a request names (§6's rules); 400 when it names none usable."""
    if not (email or "").strip() and not (phone or "").strip():
        raise MissingIdentifier(
            errors=[{"field": "email", "message": "give an email or a phoneNumber"}]
        )
    normalized = normalize_email(email) if email else None
    if email and normalized is None:
        raise ValidationFailed(
            "email is not a valid address",
            errors=[{"field": "email", "message": "not a valid address"}],
        )
    e164 = None
    if phone:
        e164 = normalize_phone(phone, profile_region(session, profile_id))
        if e164 is None:
            raise ValidationFailed(
                "phoneNumber is not a usable phone number",
                errors=[{"field": "phoneNumber", "message": "not a usable phone number"}],
            )
    return Person(normalized, e164)


def matching(profile_id: str, who: Person) -> list[ColumnElement[bool]]:
    matches: list[ColumnElement[bool]] = []
    if who.email:
        matches.append(Customer.email == who.email)
    if who.phone:
        matches.append(Customer.phone_number == who.phone)
    return [Customer.profile_id == profile_id, or_(*matches)]


def _opt_out_rows(session: Session, rows: Sequence[Any], by: str) -> int:
    """Opts (customer id, profile id) rows out on `by`'s behalf; answers how many."""
    now = utcnow()
    values = [
        {"customer_id": r.id, "profile_id": r.profile_id, "created_at": now, by: True} for r in rows
    ]
    for start in range(0, len(values), _BATCH):
        queries.upsert_opt_outs(session.connection(), values[start : start + _BATCH], by)
    forget(session, (r.profile_id for r in rows))  # the stored counts are wrong from now
    return len(values)


def _lift(session: Session, customer_ids: Any, by: str, profile_ids: Sequence[str]) -> int:
    """Lifts `by`'s opt-out of these customers (of these profiles); answers how many had
    one."""
    column = getattr(OptOut, by)
    result = session.execute(
        update(OptOut)
        .where(OptOut.customer_id.in_(customer_ids), column.is_(True))
        .values({by: False})
        .execution_options(synchronize_session=False)
    )
    session.execute(
        delete(OptOut)
        .where(OptOut.customer_id.in_(customer_ids))
        .where(OptOut.by_merchant.is_(False), OptOut.by_stop.is_(False))
        .execution_options(synchronize_session=False)
    )
    lifted = int(getattr(result, "rowcount", 0) or 0)
    if lifted:
        forget(session, profile_ids)  # the stored counts are wrong from now
    return lifted


def opt_out(session: Session, *, profile_id: str, email: str | None, phone: str | None) -> int:
    """The merchant opts the matching customers out of every export; answers how many match."""
    who = person(session, profile_id, email, phone)
    rows = session.execute(
        select(Customer.id, Customer.profile_id).where(*matching(profile_id, who))
    ).all()
    return _opt_out_rows(session, rows, BY_MERCHANT)


def opt_in(session: Session, *, profile_id: str, email: str | None, phone: str | None) -> int:
    """The merchant lifts its own opt-out of the matching customers (a STOP stays);
    answers how many customers had one."""
    who = person(session, profile_id, email, phone)
    ids = select(Customer.id).where(*matching(profile_id, who))
    return _lift(session, ids, BY_MERCHANT, [profile_id])


def opt_out_phone(session: Session, phone_e164: str) -> int:
    """An SMS STOP: every customer with this phone, in every profile, is opted out."""
    rows = session.execute(
        select(Customer.id, Customer.profile_id).where(Customer.phone_number == phone_e164)
    ).all()
    return _opt_out_rows(session, rows, BY_STOP)


def opt_in_phone(session: Session, phone_e164: str) -> int:
    """An SMS START: lifts what STOP did for every customer with this phone (a merchant's
    opt-out stays); answers how many customers had a STOP opt-out."""
    ids = select(Customer.id).where(Customer.phone_number == phone_e164)
    profiles = session.scalars(
        select(Customer.profile_id).where(Customer.phone_number == phone_e164).distinct()
    ).all()
    return _lift(session, ids, BY_STOP, profiles)


def erase(
    session: Session, *, profile_id: str, email: str | None, phone: str | None, digest_key: bytes
) -> int:
    """Carries out a data subject's erasure in the profile; answers how many customers.

    Name, email, phone, city and postal code go from the customers (their rows are
    deleted), their orders (free text too) and the orders' receipts and touches; the
    orders stay, detached, `anonymous` and out of their campaign; only keyed digests of
    the emails and phones are kept, in the suppression list.
    """
    who = person(session, profile_id, email, phone)
    found = session.execute(
        select(
            Customer.id,
            Customer.email,
            Customer.phone_number,
            Customer.first_name,
            Customer.last_name,
        ).where(*matching(profile_id, who))
    ).all()
    ids = [r.id for r in found]
    emails = {e for e in [who.email, *(r.email for r in found)] if e}
    phones = {p for p in [who.phone, *(r.phone_number for r in found)] if p}
    order_match = [Order.customer_id.in_(ids)] if ids else []
    if emails:
        order_match.append(Order.customer_email.in_(emails))
    if phones:
        order_match.append(Order.customer_phone_number.in_(phones))
    own_orders = session.execute(
        select(
            Order.id,
            Order.customer_phone_number,
            Order.customer_first_name.label("first_name"),
            Order.customer_last_name.label("last_name"),
        ).where(Order.profile_id == profile_id, or_(*order_match))
    ).all()
    if not ids and not own_orders:
        return 0
    names = {n for r in [*found, *own_orders] for n in (r.first_name, r.last_name) if n}
    raw_phones = {r.customer_phone_number for r in own_orders if r.customer_phone_number}
    region = profile_region(session, profile_id)
    _detach_orders(session, [r.id for r in own_orders])
    # The person's own orders lose their names too; any order of the profile loses the
    # person's email and phone wherever its free text carries them.
    own = scrub.needles(
        emails=emails, phones=phones, raw_phones=raw_phones, names=names, region=region
    )
    _scrub_details(session, [r.id for r in own_orders], own)
    others = scrub.needles(emails=emails, phones=phones, raw_phones=raw_phones, region=region)
    _scrub_details(session, _orders_mentioning(session, profile_id, emails, phones), others)
    unkeyed = {sha256_hex(e) for e in emails} | {sha256_hex(p) for p in phones}
    # Touches keep only the ad platforms' unkeyed hashes (orders' table); the person's go.
    erase_touches(session, profile_id=profile_id, hashes=unkeyed)
    if ids:
        session.execute(delete(Customer).where(Customer.id.in_(ids)))
    _suppress(session, profile_id, suppression_digests(digest_key, emails, phones))
    forget(session, [profile_id])  # the stored counts are wrong from now
    return len(ids)


def suppression_digests(digest_key: bytes, emails: Any, phones: Any) -> set[str]:
    """What the suppression list keeps of erased identifiers: keyed digests of their
    stored forms (email lower-cased, phone in E.164)."""
    values = {normalized_email(e) for e in emails} | {google_phone(p) for p in phones}
    return {identifier_digest(digest_key, v) for v in values if v}


def _orders_mentioning(
    session: Session, profile_id: str, emails: set[str], phones: set[str]
) -> list[int]:
    """Orders of the profile whose details' text may carry one of these identifiers
    (the last four digits of a phone find it in any of its written forms)."""
    text = func.lower(cast(Order.details, Text))
    hints = [text.contains(e.lower(), autoescape=True) for e in emails]
    hints += [text.contains(p[-4:], autoescape=True) for p in phones]
    if not hints:
        return []
    return list(
        session.scalars(select(Order.id).where(Order.profile_id == profile_id, or_(*hints)))
    )


def _scrub_details(session: Session, order_pks: list[int], needles: scrub.Needles) -> None:
    for start in range(0, len(order_pks), _BATCH):
        pks = order_pks[start : start + _BATCH]
        for pk, details in session.execute(
            select(Order.id, Order.details).where(Order.id.in_(pks))
        ):
            scrubbed = needles.scrub(details)
            if scrubbed != details:
                session.execute(update(Order).where(Order.id == pk).values(details=scrubbed))


def _detach_orders(session: Session, order_pks: list[int]) -> None:
    for start in range(0, len(order_pks), _BATCH):
        pks = order_pks[start : start + _BATCH]
        session.execute(
            update(Order)
            .where(Order.id.in_(pks))
            .values(
                customer_id=None,
                customer_first_name=None,
                customer_last_name=None,
                customer_email=None,
                customer_phone_number=None,
                conversion="anonymous",
                # Anonymous everywhere, campaign rows of Results included (CONTRACT §12).
                campaign_id=None,
                updated_at=utcnow(),
            )
        )
        # An SMS not sent yet is not sent; a sent one forgets its number.
        session.execute(
            delete(Receipt).where(Receipt.order_pk.in_(pks), Receipt.status == "pending")
        )
        session.execute(update(Receipt).where(Receipt.order_pk.in_(pks)).values(to_phone=None))


def _suppress(session: Session, profile_id: str, digests: set[str]) -> None:
    now = utcnow()
    rows = [
        {
            "profile_id": profile_id,
            "identifier_digest": d,
            "digest_of": DIGEST_OF_VALUE,
            "created_at": now,
        }
        for d in sorted(digests)
    ]
    insert_new(session.connection(), Suppression.__table__, rows)
