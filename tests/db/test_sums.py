"""db/sums.py: sums of 64-bit integers exact on both databases, beyond 2**63 and with
negative values, and ordered by their parts as by the sums themselves."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import BigInteger, Integer, literal, select, union_all
from sqlalchemy.orm import Session

from partnerlink.db import sums

INT64 = st.integers(-(2**63) + 1, 2**63 - 1)
EDGES = st.sampled_from([2**63 - 1, -(2**63) + 1, 999_999, -999_999, 10**6, -(10**6), 0])


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    rows=st.lists(st.tuples(st.integers(0, 4), INT64 | EDGES), min_size=1, max_size=40),
    pick=st.integers(0, 4),
)
def test_sums_are_exact_and_ordered_by_their_parts(
    session: Session, rows: list[tuple[int, int]], pick: int
) -> None:
    expected: dict[int, int] = {}
    for group, value in rows:
        expected[group] = expected.get(group, 0) + value
    table = union_all(
        *(
            select(literal(g, Integer).label("g"), literal(v, BigInteger).label("v"))
            for g, v in rows
        )
    ).subquery("t")
    dialect = session.get_bind().dialect.name
    summed = select(table.c.g, *sums.exact_sum(dialect, table.c.v, "total")).group_by(table.c.g)
    read = {group: sums.total(parts) for group, *parts in session.execute(summed)}
    assert read == expected

    by_sum = summed.subquery()
    parts = sums.parts(by_sum.c, "total")
    ranked = select(by_sum.c.g).order_by(*(p.desc() for p in parts), by_sum.c.g)
    assert list(session.scalars(ranked)) == sorted(expected, key=lambda g: (-expected[g], g))

    cut_group = sorted(expected)[pick % len(expected)]
    cut = session.execute(select(*parts).where(by_sum.c.g == cut_group)).one()
    above = set(session.scalars(select(by_sum.c.g).where(sums.above(parts, cut))))
    equal = set(session.scalars(select(by_sum.c.g).where(sums.equal(parts, cut))))
    session.rollback()
    assert above == {g for g, total in expected.items() if total > expected[cut_group]}
    assert equal == {g for g, total in expected.items() if total == expected[cut_group]}


def test_a_sum_of_no_rows_is_zero() -> None:
    assert sums.total([None]) == 0 and sums.total([None, None]) == 0
