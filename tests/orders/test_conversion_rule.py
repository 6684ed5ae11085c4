"""The conversion rule is written once (conversion.RULES): the upsert's SQL CASE and
Python's `classify` are both generated from it, and agree on every case."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text
from sqlalchemy.orm import Session

from partnerlink.orders.conversion import (
    ANONYMOUS,
    CLASSES,
    CLICK,
    NEW,
    ORGANIC,
    RETURNING,
    RULES,
    VIEW,
    CountedTouch,
    classify,
    conversion_case,
    conversion_of,
    counts_until,
)
from partnerlink.orders.queries import UPSERT_ORDER

FACTS = [fact for fact, _ in RULES]
ORDERED_AT = datetime(2024, 5, 10, 12, tzinfo=UTC)


@pytest.mark.parametrize("values", list(itertools.product((False, True), repeat=len(FACTS))))
def test_the_sql_case_gives_what_python_gives_for_every_combination_of_facts(
    session: Session, values: tuple[bool, ...]
) -> None:
    facts = dict(zip(FACTS, values, strict=True))
    conditions = {fact: "1 = 1" if holds else "1 = 0" for fact, holds in facts.items()}
    in_sql = session.execute(text(f"SELECT {conversion_case(conditions)}")).scalar_one()
    assert in_sql == conversion_of(facts)
    assert in_sql in CLASSES


def test_the_rule_reads_in_the_contracts_order() -> None:
    assert conversion_of(dict.fromkeys(FACTS, True)) == ANONYMOUS
    assert conversion_of(dict.fromkeys(FACTS, False)) == NEW
    assert conversion_case(dict.fromkeys(FACTS, "c")) == (
        f"CASE WHEN c THEN '{ANONYMOUS}' WHEN c THEN '{ORGANIC}' WHEN c THEN '{RETURNING}'"
        f" ELSE '{NEW}' END"
    )


def test_the_upsert_carries_the_generated_case() -> None:
    for _, conversion in RULES:
        assert f" THEN '{conversion}'" in UPSERT_ORDER.sqlite
    assert f" ELSE '{NEW}' END" in UPSERT_ORDER.sqlite


def _touch(days_before: float, campaign: str, kind: str = CLICK, window: int = 7) -> CountedTouch:
    at = ORDERED_AT - timedelta(days=days_before)
    return CountedTouch(at, campaign, kind == CLICK, counts_until(at, window))


def test_classify_follows_the_rule() -> None:
    touch = _touch(2, "spring")
    stale = _touch(9, "winter")
    later = _touch(-1 / 24, "summer")
    earlier_order = ORDERED_AT - timedelta(days=30)
    assert classify(ORDERED_AT, ORDERED_AT, [touch]) == (NEW, "spring", CLICK)
    assert classify(ORDERED_AT, earlier_order, [touch]) == (RETURNING, "spring", CLICK)
    assert classify(ORDERED_AT, ORDERED_AT, [stale, later]) == (ORGANIC, None, None)
    assert classify(ORDERED_AT, earlier_order, []) == (ORGANIC, None, None)


def test_classify_reads_each_touchs_own_window() -> None:
    """A later touch whose window has ended gives way to an earlier one whose window holds
    the order (§16); at one instant and campaign, a click comes before a view."""
    old_click = _touch(20, "google", window=30)
    ended_view = _touch(2, "meta", VIEW, window=1)
    assert classify(ORDERED_AT, ORDERED_AT, [old_click, ended_view]) == (NEW, "google", CLICK)
    fresh_view = _touch(0.5, "meta", VIEW, window=1)
    assert classify(ORDERED_AT, ORDERED_AT, [old_click, fresh_view]) == (NEW, "meta", VIEW)
    same_click = _touch(0.5, "meta", CLICK)
    assert classify(ORDERED_AT, ORDERED_AT, sorted([fresh_view, same_click]))[2] == CLICK
    too_old = _touch(91, "google", window=90)
    assert classify(ORDERED_AT, ORDERED_AT, [too_old])[0] == ORGANIC
