"""Secrets, passwords, the client's address and log redaction: the shared security kit."""

from __future__ import annotations

import logging
import os
import subprocess
import sys

import pytest
from starlette.requests import Request

from partnerlink.security.client_address import client_address
from partnerlink.security.passwords import CHEAP_FOR_TESTS, hash_password, verify_password
from partnerlink.security.redaction import RedactingFilter, is_secret_param, redact
from partnerlink.security.secrets import (
    ACCESS_TOKEN_PREFIX,
    digest,
    matches,
    mint,
    sign,
    verify_signature,
)


def test_minted_secrets_are_prefixed_random_and_checked_against_their_digest() -> None:
    first, second = mint(ACCESS_TOKEN_PREFIX), mint(ACCESS_TOKEN_PREFIX)

    assert first.startswith("plk_at_") and second.startswith("plk_at_")
    assert first != second
    assert mint(ACCESS_TOKEN_PREFIX, sandbox=True).startswith("plk_at_test_")
    assert len(digest(first)) == 64 and first not in digest(first)
    assert matches(first, digest(first))
    assert not matches(second, digest(first))


def test_a_signature_holds_only_for_its_key_and_message() -> None:
    signature = sign(b"key-one", "store=s1")

    assert verify_signature(b"key-one", "store=s1", signature)
    assert not verify_signature(b"key-two", "store=s1", signature)
    assert not verify_signature(b"key-one", "store=s2", signature)


def test_a_password_verifies_only_against_its_own_hash() -> None:
    stored = hash_password("correct horse battery staple")

    assert stored.startswith("$argon2id$")
    assert verify_password("correct horse battery staple", stored)
    assert not verify_password("wrong", stored)
    assert not verify_password("anything", None)  # an unknown email
    assert not verify_password("anything", "not-a-hash")


def test_passwords_are_hashed_with_argon2s_defaults_unless_the_test_variable_is_set() -> None:
    # The suite itself hashes cheaply (tests/conftest.py); a process without the
    # variable, as in production, uses argon2id's defaults: 64 MiB, 3 passes, 4 lanes.
    env = {k: v for k, v in os.environ.items() if k != CHEAP_FOR_TESTS}
    program = "from partnerlink.security.passwords import hash_password; print(hash_password('x'))"
    made = subprocess.run(
        [sys.executable, "-c", program], env=env, capture_output=True, text=True, check=True
    )

    assert made.stdout.startswith("$argon2id$v=19$m=65536,t=3,p=4$")
    assert verify_password("x", made.stdout.strip())


def _request(peer: str, forwarded: str | None = None) -> Request:
    headers = [(b"x-forwarded-for", forwarded.encode())] if forwarded else []
    return Request({"type": "http", "client": (peer, 50000), "headers": headers})


def test_forwarded_for_is_believed_only_from_a_trusted_proxy() -> None:
    proxies = frozenset({"10.0.0.1", "10.0.0.2"})

    assert client_address(_request("203.0.113.9", "198.51.100.1"), proxies) == "203.0.113.9"
    assert client_address(_request("10.0.0.1", "198.51.100.1"), proxies) == "198.51.100.1"
    # A client's own X-Forwarded-For sits left of what our proxies appended: not believed.
    assert (
        client_address(_request("10.0.0.1", "1.2.3.4, 198.51.100.1, 10.0.0.2"), proxies)
        == "198.51.100.1"
    )
    assert client_address(_request("10.0.0.1"), proxies) == "10.0.0.1"


@pytest.mark.parametrize(
    ("line", "redacted"),
    [
        (
            '"GET /v1/stores?access_token=plk_at_abc&limit=5 HTTP/1.1" 200',
            '"GET /v1/stores?access_token=[REDACTED]&limit=5 HTTP/1.1" 200',
        ),
        (
            "POST /v1/auth/revoke?token=plk_rt_abc",
            "POST /v1/auth/revoke?token=[REDACTED]",
        ),
        (
            "GET /v1/stores?ACCESS%5Ftoken=plk_at_abc",
            "GET /v1/stores?ACCESS%5Ftoken=[REDACTED]",
        ),
        (
            "GET /merchant/api/consents/plk_it_abc/choices",
            "GET /merchant/api/consents/[REDACTED]/choices",
        ),
        ("GET /v1/stores?limit=5", "GET /v1/stores?limit=5"),
    ],
)
def test_credentials_never_reach_a_log_line(line: str, redacted: str) -> None:
    assert redact(line) == redacted


def test_a_credential_parameter_is_known_however_it_is_spelled() -> None:
    assert is_secret_param("client_secret")
    assert is_secret_param("CODE")
    assert is_secret_param("refresh%255Ftoken")  # encoded twice
    assert not is_secret_param("limit")


TOKEN = "plk_at_6aB4deFpKCrq7vRffihCQeLxFU0-8MKZnHML3uKblz8"


@pytest.mark.parametrize(
    "query",
    [
        f"access_token%00={TOKEN}",  # NUL after the name
        f"%E2%80%8Baccess_token={TOKEN}",  # a zero-width space before it
        f"%EF%BD%81ccess_token={TOKEN}",  # a fullwidth a
        f"access-token={TOKEN}",
        f"client__secret=plk_cs_{TOKEN[7:]}",
        f"note={TOKEN}",  # any name: the value is ours
        f"note=plk%5Fat%5F{TOKEN[7:]}",  # ours, percent-encoded
        f"x=1&note=%2570lk_rt_{TOKEN[7:]}",  # encoded twice
    ],
)
def test_a_secret_in_the_query_is_redacted_whatever_its_name_or_spelling(query: str) -> None:
    line = f'127.0.0.1:5 - "GET /v1/stores?{query} HTTP/1.1" 403'
    redacted = redact(line)
    assert TOKEN[7:] not in redacted and "[REDACTED]" in redacted, redacted
    assert redacted.endswith(' HTTP/1.1" 403')


def test_a_value_with_our_secret_prefix_is_redacted_anywhere_in_a_log_line() -> None:
    assert (
        redact(f"refused {TOKEN} for plk_ci_abc123")
        == "refused plk_at_[REDACTED] for plk_ci_abc123"
    )
    assert (
        redact("GET /v1/x/plk_it_test_abc-def HTTP/1.1") == "GET /v1/x/plk_it_[REDACTED] HTTP/1.1"
    )
    assert redact("session plk_ms_xyz ended") == "session plk_ms_[REDACTED] ended"
    assert redact("GET /v1/stores?limit=5&cursor=plk HTTP/1.1") == (
        "GET /v1/stores?limit=5&cursor=plk HTTP/1.1"
    )


def test_the_filter_redacts_arguments_and_tracebacks(caplog: pytest.LogCaptureFixture) -> None:
    """uvicorn's access line carries the path in its arguments; an error's traceback may
    quote what the code was handed."""
    logger = logging.getLogger("tests.redaction")
    logger.addFilter(RedactingFilter())
    try:
        with caplog.at_level(logging.INFO, logger="tests.redaction"):
            logger.info('%s - "%s %s"', "127.0.0.1:5", "GET", f"/v1/stores?tok%00en={TOKEN}")
            try:
                raise ValueError(f"bad token {TOKEN}")
            except ValueError:
                logger.exception("failed")
    finally:
        logger.filters.clear()
    text = caplog.text + "".join(logging.Formatter().format(r) for r in caplog.records)
    assert "failed" in text and "ValueError" in text
    assert TOKEN[7:] not in text
