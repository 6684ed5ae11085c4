"""`partnerlink touches import FILE` (CONTRACT.md §5): JSON lines, rejected lines reported."""

from __future__ import annotations

import json
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session
from typer.testing import CliRunner, Result

from partnerlink.cli import app as cli_app
from partnerlink.orders.conversion import identifier_hash
from partnerlink.orders.models import Touch
from partnerlink.settings import Settings
from tests.factories import create_merchant_account, create_profile


def run_cli(settings: Settings, *args: str) -> Result:
    env = {
        "PARTNERLINK_DATABASE_URL": settings.database_url,
        "PARTNERLINK_DATA_DIR": str(settings.data_dir),
        "PARTNERLINK_SECRET_KEY": "test-secret-key-not-for-production",
    }
    return CliRunner().invoke(cli_app, list(args), env=env, catch_exceptions=False)


def write_lines(path: Path, lines: list[object]) -> Path:
    path.write_text(
        "\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines) + "\n"
    )
    return path


def test_import_counts_and_lists_rejected_lines(
    settings: Settings, session: Session, tmp_path: Path
) -> None:
    profile = create_profile(session, create_merchant_account(session))
    good = {"profileId": profile.id, "campaignId": "spring", "touchedAt": "2024-05-01T10:00:00Z"}
    file = write_lines(
        tmp_path / "touches.jsonl",
        [
            {**good, "email": " Ada@Example.com "},
            {**good, "phoneNumber": "415 555 0123", "countryCode": "US"},
            "not json",
            {**good, "profileId": "no-such-profile", "email": "a@example.com"},
            {**good, "email": "not-an-email"},
            "",
            {**good, "touchedAt": "last tuesday", "email": "b@example.com"},
            [1, 2],
            {**good, "campaignId": "", "email": "c@example.com"},
            {**good, "phoneNumber": "4155550124"},  # no + and no countryCode: unusable
        ],
    )
    result = run_cli(settings, "touches", "import", str(file), "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert (out["imported"], out["rejected"]) == (2, 7)
    assert [error["line"] for error in out["errors"]] == [3, 4, 5, 7, 8, 9, 10]

    human = run_cli(settings, "touches", "import", str(file))
    for error in out["errors"]:  # the same reasons, line by line, in both outputs
        assert f"line {error['line']}: {error['reason']}" in human.stdout
    touches = list(session.scalars(select(Touch).order_by(Touch.id)))
    session.rollback()
    assert [(t.email_sha256, t.phone_sha256) for t in touches[:2]] == [
        (identifier_hash("ada@example.com"), None),
        (None, identifier_hash("+14155550123")),
    ]
    assert touches[0].touched_at.isoformat() == "2024-05-01T10:00:00+00:00"


def test_large_file_imports_with_progress(
    settings: Settings, session: Session, tmp_path: Path
) -> None:
    profile = create_profile(session, create_merchant_account(session))
    lines: list[object] = [
        {
            "profileId": profile.id,
            "campaignId": f"campaign-{n % 7}",
            "email": f"person{n}@example.com",
            "touchedAt": "2024-05-01T10:00:00+02:00",
        }
        for n in range(12_000)
    ]
    lines[5000] = "{broken"
    file = write_lines(tmp_path / "big.jsonl", lines)
    assert file.stat().st_size > 1_000_000
    result = run_cli(settings, "touches", "import", str(file))
    assert result.exit_code == 0
    assert "Imported 11999 touches; 0 already stored; rejected 1;" in result.stdout
    assert "line 5001: not valid JSON" in result.stdout


def test_missing_file_exits_1(settings: Settings, tmp_path: Path) -> None:
    result = run_cli(settings, "touches", "import", str(tmp_path / "nope.jsonl"))
    assert result.exit_code == 1
