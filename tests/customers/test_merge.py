"""The batch form of the matching rule (pure: no database)."""

from __future__ import annotations

from partnerlink.customers.ingestion.merge import NormalizedRecord, StoredRow, plan_batch


def rec(
    email: str | None = None,
    phone: str | None = None,
    first: str | None = None,
    city: str | None = None,
) -> NormalizedRecord:
    return (email, phone, first, None, city, None, None)


def row(
    customer_id: int,
    email: str | None = None,
    phone: str | None = None,
    first: str | None = None,
    city: str | None = None,
) -> StoredRow:
    return (customer_id, email, phone, first, None, city, None, None)


def test_new_records_are_created() -> None:
    plan = plan_batch([rec("a@x.com"), rec(phone="+14155550001")], [])
    assert (plan.created, plan.updated, plan.unchanged) == (2, 0, 0)
    assert [e.values[:2] for e in plan.inserts] == [["a@x.com", None], [None, "+14155550001"]]


def test_email_matches_the_stored_customer() -> None:
    plan = plan_batch([rec("a@x.com", first="Ann")], [row(7, "a@x.com", first="Ann")])
    assert (plan.created, plan.updated, plan.unchanged) == (0, 0, 1)
    assert not plan.inserts and not plan.updates


def test_non_empty_fields_overwrite_and_empty_ones_keep() -> None:
    plan = plan_batch([rec("a@x.com", city="Oslo")], [row(7, "a@x.com", first="Ann", city="Rome")])
    assert plan.updated == 1
    assert plan.updates[0].values == ["a@x.com", None, "Ann", None, "Oslo", None, None]


def test_phone_only_customer_takes_the_email() -> None:
    plan = plan_batch([rec("a@x.com", "+14155550001")], [row(3, phone="+14155550001")])
    assert (plan.created, plan.updated) == (0, 1)
    assert plan.updates[0].id == 3 and plan.updates[0].values[0] == "a@x.com"


def test_customer_with_another_email_keeps_it_and_a_new_one_is_made() -> None:
    plan = plan_batch([rec("b@x.com", "+14155550001")], [row(3, "a@x.com", "+14155550001")])
    assert (plan.created, plan.updated) == (1, 0)
    assert plan.inserts[0].values[:2] == ["b@x.com", "+14155550001"]


def test_without_email_matches_by_phone_preferring_the_phone_only_customer() -> None:
    stored = [row(2, "a@x.com", "+14155550001"), row(5, None, "+14155550001")]
    plan = plan_batch([rec(phone="+14155550001", city="Oslo")], stored)
    assert plan.updates[0].id == 5


def test_without_email_matches_the_oldest_customer_with_that_phone() -> None:
    stored = [row(9, "b@x.com", "+14155550001"), row(4, "a@x.com", "+14155550001")]
    plan = plan_batch([rec(phone="+14155550001", city="Oslo")], stored)
    assert plan.updates[0].id == 4


def test_identical_duplicates_collapse_and_count_unchanged() -> None:
    plan = plan_batch([rec("a@x.com", first="Ann")] * 3, [])
    assert (plan.created, plan.updated, plan.unchanged) == (1, 0, 2)
    assert len(plan.inserts) == 1


def test_later_duplicate_values_win_and_the_duplicate_counts_unchanged() -> None:
    plan = plan_batch([rec("a@x.com", first="Ann"), rec("a@x.com", first="Anna")], [])
    assert (plan.created, plan.unchanged) == (1, 1)
    assert plan.inserts[0].values[2] == "Anna"


def test_replaying_a_list_with_conflicting_duplicates_changes_nothing() -> None:
    records = [rec("a@x.com", first="Ann"), rec("a@x.com", first="Anna")]
    plan = plan_batch(records, [row(1, "a@x.com", first="Anna")])
    assert (plan.created, plan.updated, plan.unchanged) == (0, 0, 2)


def test_phone_only_record_then_email_record_make_one_customer() -> None:
    plan = plan_batch([rec(phone="+14155550001", first="Bo"), rec("b@x.com", "+14155550001")], [])
    assert (plan.created, plan.unchanged) == (1, 1)
    assert plan.inserts[0].values[:3] == ["b@x.com", "+14155550001", "Bo"]


def test_a_customer_changed_back_within_the_batch_is_unchanged() -> None:
    records = [rec("a@x.com", first="Bob"), rec("a@x.com", first="Ann")]
    plan = plan_batch(records, [row(1, "a@x.com", first="Ann")])
    assert (plan.updated, plan.unchanged) == (0, 2)
    assert not plan.updates


def test_moving_a_phone_reindexes_it() -> None:
    stored = [row(1, "a@x.com", "+14155550001")]
    plan = plan_batch([rec("a@x.com", "+14155550002"), rec(phone="+14155550001")], stored)
    # The old phone no longer belongs to anyone: the phone-only record is a new customer.
    assert (plan.created, plan.updated) == (1, 1)
