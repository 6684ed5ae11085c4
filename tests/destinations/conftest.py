from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from tests.factories import ConnectedStoreFixture, create_connected_store
from tests.merchant.conftest import fresh_sign_in_budgets  # noqa: F401
from tests.merchant.helpers import sign_in


@pytest.fixture
def shop(session: Session) -> ConnectedStoreFixture:
    return create_connected_store(session)


@pytest.fixture
def owner(client: TestClient, shop: ConnectedStoreFixture) -> dict[str, str]:
    """The bearer header of the shop's merchant."""
    return sign_in(client)
