"""The period a Results request names (`from`, `to`), for the merchant API and the page alike."""

from __future__ import annotations

from datetime import date
from typing import Annotated

from fastapi import Depends, Query

from partnerlink.measurement.results import period


def results_period(
    start: Annotated[date | None, Query(alias="from")] = None,
    end: Annotated[date | None, Query(alias="to")] = None,
) -> tuple[date, date]:
    """`from` and `to`, both inclusive, checked; by default the last four weeks."""
    return period(start, end)


ResultsPeriod = Annotated[tuple[date, date], Depends(results_period)]
