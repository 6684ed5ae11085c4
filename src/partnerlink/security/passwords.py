"""Merchant passwords: argon2id, OWASP's first choice."""

from __future__ import annotations

import functools
import os

from argon2 import PasswordHasher, profiles
from argon2.exceptions import InvalidHashError, VerificationError

# For the test suite only: each default hash takes 64 MiB and 3 passes (~0.1 s of CPU,
# over a second on a busy machine), and the suite makes thousands. With this variable set
# (tests/conftest.py sets it, and live servers inherit it) hashes use argon2's cheapest
# parameters: still argon2id and verified the same way (a hash carries its parameters),
# but weak. Never set it in production; left unset, the defaults below hold.
CHEAP_FOR_TESTS = "PARTNERLINK_TEST_CHEAP_PASSWORD_HASHES"


@functools.cache
def _hasher() -> PasswordHasher:
    # Built on first use, so the variable counts whenever it was set before then.
    if os.environ.get(CHEAP_FOR_TESTS) == "1":
        return PasswordHasher.from_parameters(profiles.CHEAPEST)
    return PasswordHasher()


@functools.cache
def _dummy_hash() -> str:
    """Verified against when the email is unknown, so both failures take the same time."""
    return _hasher().hash("partnerlink-timing-equaliser")


def hash_password(password: str) -> str:
    return _hasher().hash(password)


def verify_password(password: str, password_hash: str | None) -> bool:
    try:
        hasher = _hasher()
        return hasher.verify(password_hash or _dummy_hash(), password) and password_hash is not None
    except (VerificationError, InvalidHashError):
        return False
