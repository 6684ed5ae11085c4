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
    NEW,
    ORGANIC,
    RETURNING,
    RULES,
    classify,
    conversion_case,
    conversion_of,
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


def test_classify_follows_the_rule() -> None:
    touch = (ORDERED_AT - timedelta(days=2), "spring")
    stale = (ORDERED_AT - timedelta(days=9), "winter")
    later = (ORDERED_AT + timedelta(hours=1), "summer")
    earlier_order = ORDERED_AT - timedelta(days=30)
    assert classify(ORDERED_AT, ORDERED_AT, [touch], 7) == (NEW, "spring")
    assert classify(ORDERED_AT, earlier_order, [touch], 7) == (RETURNING, "spring")
    assert classify(ORDERED_AT, ORDERED_AT, [stale, later], 7) == (ORGANIC, None)
    assert classify(ORDERED_AT, earlier_order, [], 7) == (ORGANIC, None)
