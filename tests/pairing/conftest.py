"""Fixtures of the pairing tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from partnerlink.app import create_app
from partnerlink.settings import Settings
from tests.pairing.builders import Shop, create_shop


@pytest.fixture
def shop(session: Session) -> Shop:
    return create_shop(session)


@pytest.fixture
def client_with(settings: Settings) -> Iterator[Callable[..., TestClient]]:
    """Builds a client of an app whose settings differ from the test defaults."""
    with ExitStack() as stack:

        def build(**changes: Any) -> TestClient:
            app = create_app(settings.model_copy(update=changes))
            return stack.enter_context(TestClient(app))

        yield build
