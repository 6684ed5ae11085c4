"""The README and docs/ stand alone and say what the code does: every setting with its
default, every command, and no pointer to documents a clone does not have."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import typer.main
from typer._click import Context

from partnerlink.cli import app as cli_app
from partnerlink.settings import Settings
from tests.conftest import LiveServer
from tests.walkthroughs import checkout_command, json_answers, run_blocks, sh_blocks

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
DOCS = [ROOT / "README.md", ROOT / "bench" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def section(text: str, title: str) -> str:
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else None]


def test_no_document_sends_the_reader_to_spec_or_contract() -> None:
    for path in DOCS:
        text = path.read_text()
        assert "SPEC.md" not in text and "CONTRACT.md" not in text, path
        for target in re.findall(r"\]\(([^)#]+)", text):
            if not target.startswith("http"):
                assert (path.parent / target).exists(), (path, target)


def test_settings_table_is_every_setting_with_its_default() -> None:
    rows = re.findall(
        r"^\| (`PARTNERLINK_[^|]+)\| ([^|]+) \|(.*)$", section(README, "Settings"), re.M
    )
    documented: dict[str, tuple[str, str]] = {}
    for names, default, meaning in rows:
        first, *more = re.findall(r"`([A-Z0-9_]+)`", names)
        documented[first] = (default.strip().strip("`"), meaning)
        prefix = first.rsplit("_", 2)[0]  # PARTNERLINK_TWILIO_ACCOUNT_SID, `_AUTH_TOKEN`, ...
        for suffix in more:
            documented[prefix + suffix] = ("—", meaning)
    fields = Settings.model_fields
    assert set(documented) == {f"PARTNERLINK_{name.upper()}" for name in fields}
    for name, field in fields.items():
        shown, meaning = documented[f"PARTNERLINK_{name.upper()}"]
        default = field.default
        if isinstance(default, bool):
            assert shown == str(default).lower(), name
        elif isinstance(default, int | float) or (isinstance(default, str) and default):
            # A default told in the meaning column: "`_API_URL` defaults to https://..."
            assert shown == str(default) or (shown == "—" and str(default) in meaning), name
        elif isinstance(default, Path):
            assert shown == f"./{default}", name
        else:
            assert default in (None, ""), name


def test_command_table_names_real_commands() -> None:
    click_app = typer.main.get_command(cli_app)
    context = Context(click_app)
    rows = re.findall(
        r"^\| `partnerlink ([a-z-]+)(?: ([a-z-]+))?", section(README, "Command line"), re.M
    )
    assert len(rows) >= 9
    for group, sub in rows:
        # Commands are loaded when asked for (cli/__init__.py), as `partnerlink` does.
        command = click_app.get_command(context, group)  # type: ignore[attr-defined]
        assert command is not None, group
        if sub and hasattr(command, "commands"):
            assert sub in command.commands, (group, sub)


def test_walkthrough_uses_the_demos_variable_names() -> None:
    walkthrough = section(README, "Walkthrough: both connection flows with curl")
    for name in ("BASE", "CID", "CS", "IT", "AT", "RT"):
        assert f"${name}" in walkthrough, name
    assert "PL_BASE" not in walkthrough and "CLIENT_ID=" not in walkthrough


@pytest.mark.slow
def test_walkthrough_sections_three_and_four_do_what_they_show(
    live_server: LiveServer, tmp_path: Path
) -> None:
    """Pasted after the demo's pairing block, as a newcomer would (`.venv/bin/partnerlink`
    being this checkout's command line on the server's database)."""
    demo = json.loads(live_server.cli("demo", "--json").stdout)
    checkout_command(tmp_path)
    blocks = sh_blocks(README, "### 3. Sending data", "Touches may arrive before")
    script = "\n".join([demo["commands"][-1]["command"], *blocks]).replace(
        "PW=...", f"PW='{demo['merchant']['password']}'"
    )

    done = run_blocks([script], tmp_path, live_server.env, timeout=600)

    assert done.returncode == 0, done.stderr + done.stdout
    answers = [a for a in json_answers(done.stdout) if isinstance(a, dict)]
    stored = [a["store"] for a in answers if "store" in a]
    assert stored[-1]["currency"] == "EUR" and stored[-1]["address"]["country"] == "DE"
    assert {"greenInvoices": True} in answers
    assert "order A-1001  " in done.stdout and "/receipts/inv/A-1001?k=" in done.stdout
    assert {
        "imported": 1,
        "duplicates": 0,
        "rejected": 0,
        "reclassified": 1,
        "errors": [],
    } in answers
    lift = answers[-1]
    assert lift["campaignId"] == "autumn", done.stdout
    assert lift["test"]["customers"] + lift["control"]["customers"] == 42, lift
    assert lift["test"]["customers"] > 0 and lift["control"]["customers"] > 0
    assert lift["test"]["buyers"] + lift["control"]["buyers"] == 20, lift
    assert lift["conversionRate"]["test"] is not None
    assert lift["conversionRate"]["control"] is not None
    assert lift["conversionRate"]["ci95"][0] is not None
