"""The quick check every start makes before migrating (db/migrate.py): the newest
script's number is Alembic's head, and a database is upgraded only when behind it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from alembic.script import ScriptDirectory

from partnerlink.db.migrate import alembic_config, current_revision, head_revision, upgrade
from tests.conftest import ON_POSTGRES
from tests.migrations import database_at


def test_the_largest_script_number_is_alembics_single_head() -> None:
    script = ScriptDirectory.from_config(alembic_config("sqlite://"))
    assert script.get_heads() == [head_revision()]


def test_a_database_behind_is_upgraded_and_one_at_the_head_is_left_alone(
    tmp_path: Path,
) -> None:
    with database_at("0030", tmp_path) as url:
        assert current_revision(url) == "0030"
        first = upgrade(url)
        assert (first.before, first.after, first.applied) == ("0030", head_revision(), True)
        again = upgrade(url)
        assert (again.before, again.after, again.applied) == (head_revision(),) * 2 + (False,)


def test_an_empty_database_has_no_revision_until_upgraded(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'empty.db'}"
    assert current_revision(url) is None
    assert upgrade(url).before is None
    assert current_revision(url) == head_revision()


@pytest.mark.skipif(not ON_POSTGRES, reason="SQLite has one writer; the lock is PostgreSQL's")
def test_processes_migrating_a_new_database_together_all_succeed(tmp_path: Path) -> None:
    """`serve` and `partnerlink worker` started together on a new database: one migrates,
    the others wait for it and find nothing left to do. (Processes: Alembic's context
    is one per process.)"""
    with database_at("base", tmp_path) as url:
        assert current_revision(url) is None
        env = {**os.environ, "PARTNERLINK_DATABASE_URL": url}
        command = [sys.executable, "-m", "partnerlink", "db", "upgrade"]
        runs = [
            subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            for _ in range(3)
        ]
        outputs = [run.communicate(timeout=120)[0].decode() for run in runs]
        assert [run.returncode for run in runs] == [0, 0, 0], outputs
        assert current_revision(url) == head_revision()
