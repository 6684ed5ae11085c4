from __future__ import annotations

import pytest
from sqlalchemy.orm import Session

from tests.factories import ConnectedStoreFixture, create_connected_store


@pytest.fixture
def shop(session: Session) -> ConnectedStoreFixture:
    """A connected store of the owner's profile."""
    return create_connected_store(session)
