"""The console's pages are signed into like the consent screen's: the same fresh
sign-in budgets around each test (tests/web/conftest.py keeps the builders)."""

from __future__ import annotations

from tests.web.conftest import fresh_sign_in_budgets

__all__ = ["fresh_sign_in_budgets"]
