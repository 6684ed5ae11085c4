"""The quick check every start makes before migrating (db/migrate.py): the newest
script's number is Alembic's head, and a database is upgraded only when behind it."""

from __future__ import annotations

from pathlib import Path

from alembic.script import ScriptDirectory

from partnerlink.db.migrate import alembic_config, current_revision, head_revision, upgrade
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
