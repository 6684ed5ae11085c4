"""CONTRACT §14's tests: the app and the worker with the operator's Meta app and Google
client registered, both platforms being the local stand-ins."""

from __future__ import annotations

import pytest

from partnerlink.settings import Settings
from tests.destinations.fake_google import FakeGoogle
from tests.destinations.fake_meta import FakeMeta
from tests.destinations.signing_in.helpers import login_settings


@pytest.fixture
def settings(settings: Settings, servers: tuple[FakeMeta, FakeGoogle]) -> Settings:
    return login_settings(settings, *servers)


@pytest.fixture
def meta(servers: tuple[FakeMeta, FakeGoogle]) -> FakeMeta:
    return servers[0]


@pytest.fixture
def google(servers: tuple[FakeMeta, FakeGoogle]) -> FakeGoogle:
    return servers[1]
