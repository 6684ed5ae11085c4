"""Clean sign-in budgets around each merchant API test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from partnerlink.merchant.sessions import sign_in_budgets
from partnerlink.settings import Settings
from tests.merchant.helpers import TEST_CLIENT_ADDRESS, USED_EMAILS


@pytest.fixture(autouse=True)
def fresh_sign_in_budgets(settings: Settings) -> Iterator[None]:
    """The budgets live in process memory; one test's failures must not lock out the next."""
    by_email, by_address = sign_in_budgets(settings.rate_limit_storage)

    def reset() -> None:
        by_address.reset(TEST_CLIENT_ADDRESS)
        for email in USED_EMAILS:
            by_email.reset(email)

    reset()
    yield
    reset()
