"""Migration 0015 and the start-up that keys what older versions kept unkeyed (CONTRACT §12).

A database at revision 0014 (the one before 0015) holds a plain phone on the STOP list, an erased email's
unkeyed SHA-256 and opt-outs whose maker was not recorded; after the upgrade and the
start-up, the lists hold only keyed digests that still match.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import create_engine, literal, make_url, select, text
from sqlalchemy.orm import Session

from partnerlink.audiences.legacy_digests import key_legacy_digests_at_start
from partnerlink.audiences.models import OptOut, Suppression
from partnerlink.audiences.service import audiences
from partnerlink.db.engine import make_engine, make_sessionmaker
from partnerlink.db.migrate import alembic_config, upgrade
from partnerlink.receipts.models import SmsStop
from partnerlink.security.identifier_digests import (
    identifier_digest,
    identifier_digest_sql,
    identifier_key,
    register_digest_function,
)
from partnerlink.settings import Settings
from tests.conftest import ON_POSTGRES, TEST_DATABASE_URL

STOPPED = "+14155550120"
ERASED = "gone@example.com"


@pytest.fixture
def old_database(tmp_path: Path) -> Iterator[str]:
    """A database of its own, at revision 0014 (the one before 0015)."""
    if not ON_POSTGRES:
        url = f"sqlite:///{tmp_path / 'old.db'}"
        command.upgrade(alembic_config(url), "0014")
        yield url
        return
    server = make_url(Settings(database_url=TEST_DATABASE_URL).database_url)
    name = f"plk_old_{uuid.uuid4().hex[:12]}"
    admin = create_engine(server, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    url = server.set(database=name).render_as_string(hide_password=False)
    command.upgrade(alembic_config(url), "0014")
    try:
        yield url
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE "{name}" WITH (FORCE)'))
        admin.dispose()


def _arrange_old_rows(url: str) -> None:
    now = datetime.now(UTC)
    engine = make_engine(url)
    with engine.begin() as connection:
        connection.execute(
            text(
                "INSERT INTO merchants (id, email, password_hash, created_at)"
                " VALUES ('m1', 'owner@example.com', 'x', :now)"
            ),
            {"now": now},
        )
        connection.execute(
            text(
                "INSERT INTO profiles (id, merchant_id, name, created_at)"
                " VALUES ('p1', 'm1', 'Cafe', :now)"
            ),
            {"now": now},
        )
        for cid, email, phone in ((1, None, STOPPED), (2, "kept-out@example.com", None)):
            connection.execute(
                text(
                    "INSERT INTO customers (id, profile_id, email, phone_number, created_at,"
                    " updated_at) VALUES (:id, 'p1', :email, :phone, :now, :now)"
                ),
                {"id": cid, "email": email, "phone": phone, "now": now},
            )
            connection.execute(
                text(
                    "INSERT INTO audience_opt_outs (customer_id, profile_id, created_at)"
                    " VALUES (:id, 'p1', :now)"
                ),
                {"id": cid, "now": now},
            )
        connection.execute(
            text("INSERT INTO sms_stops (phone_number, stopped_at) VALUES (:phone, :now)"),
            {"phone": STOPPED, "now": now},
        )
        connection.execute(
            text(
                "INSERT INTO audience_suppressions (profile_id, identifier_sha256, created_at)"
                " VALUES ('p1', :hash, :now)"
            ),
            {"hash": hashlib.sha256(ERASED.encode()).hexdigest(), "now": now},
        )
    engine.dispose()


def test_the_upgrade_keys_the_lists_and_keeps_everyone_out_who_was(
    old_database: str, tmp_path: Path
) -> None:
    _arrange_old_rows(old_database)
    upgrade(old_database)
    settings = Settings(
        database_url=old_database, secret_key="another-service-key", data_dir=tmp_path
    )
    engine = make_engine(settings.database_url)
    sessions = make_sessionmaker(engine)
    try:
        assert key_legacy_digests_at_start(sessions, settings.signing_key) == 2
        assert (
            key_legacy_digests_at_start(sessions, settings.signing_key) == 0
        )  # nothing left to key
        key = identifier_key(settings.signing_key)
        unkeyed = hashlib.sha256(ERASED.encode()).hexdigest()
        with sessions() as session:
            assert list(session.scalars(select(SmsStop.phone_digest))) == [
                identifier_digest(key, STOPPED)
            ]
            suppressions = session.execute(
                select(Suppression.identifier_digest, Suppression.digest_of)
            ).all()
            assert suppressions == [(identifier_digest(key, unkeyed), "hmac-of-sha256")]
            # Who opted out is not known: the merchant, and STOP too where the phone stopped.
            opt_outs = session.execute(
                select(OptOut.customer_id, OptOut.by_merchant, OptOut.by_stop).order_by(
                    OptOut.customer_id
                )
            ).all()
            assert [tuple(r) for r in opt_outs] == [(1, True, True), (2, True, False)]
            # The erased person comes back: still out of every audience.
            session.execute(
                text(
                    "INSERT INTO customers (id, profile_id, email, created_at, updated_at)"
                    " VALUES (3, 'p1', :email, :now, :now)"
                ),
                {"email": ERASED, "now": datetime.now(UTC)},
            )
            counts = {
                a["segment"]: a["customers"]
                for a in audiences(session, profile_id="p1", digest_key=key)
            }
            assert counts["all"] == 0
            session.rollback()
    finally:
        engine.dispose()


def test_the_database_computes_the_same_keyed_digest_as_python(session: Session) -> None:
    """Exports and the receipt worker match in SQL what erasure and STOP write in Python."""
    key = identifier_key(b"a-service-key")
    connection = session.connection()
    register_digest_function(connection, key)
    for value in ("+14155550100", "ünïcødé@exämple.com", ""):
        computed = select(identifier_digest_sql(connection.dialect.name, key, literal(value)))
        assert connection.scalar(computed) == identifier_digest(key, value)
        assert identifier_digest(key, value) != hashlib.sha256(value.encode()).hexdigest()
