"""The walkthroughs of docs/measurement.md, docs/audiences.md and docs/webhooks.md paste as
written after `partnerlink demo` and print what their comments show (as
tests/test_readme.py does for the README's): each runs its ```sh blocks with bash against
a live server, in a folder whose `.venv/bin/partnerlink` is this checkout's."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import LiveServer, free_port
from tests.walkthroughs import (
    checkout_command,
    json_answers,
    json_block,
    matches,
    run_blocks,
    sh_blocks,
    unshown_outputs,
)

DOCS = Path(__file__).resolve().parent.parent / "docs"
DOC_URL = "http://127.0.0.1:8000"  # where the documents' answers say the server is

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        shutil.which("jq") is None,
        reason="the docs' walkthroughs read answers with jq: apt-get install jq",
    ),
]


@pytest.fixture
def one_box_server(live_env: dict[str, str]) -> Iterator[LiveServer]:
    """A live server that delivers webhooks to this machine, as webhooks.md starts it."""
    server = LiveServer({**live_env, "PARTNERLINK_WEBHOOK_ALLOW_PRIVATE": "true"})
    server.start()
    try:
        yield server
    finally:
        server.stop()


def walk(
    server: LiveServer, folder: Path, doc: str, first: str, until: str
) -> tuple[list[str], str]:
    """Runs the document's blocks from `first` to `until`; answers them and what they printed."""
    checkout_command(folder)
    blocks = sh_blocks(doc, first, until)
    done = run_blocks(blocks, folder, server.env)
    assert done.returncode == 0, done.stderr + done.stdout
    assert not done.stderr.strip(), done.stderr
    assert unshown_outputs(blocks, done.stdout) == [], done.stdout
    return blocks, done.stdout


def test_measurement_walkthrough_does_what_it_shows(
    live_server: LiveServer, tmp_path: Path
) -> None:
    doc = (DOCS / "measurement.md").read_text()

    _, printed = walk(live_server, tmp_path, doc, "## Walkthrough with curl", "## The Results")

    answers = [a for a in json_answers(printed) if isinstance(a, dict)]
    results = next(a for a in answers if "classes" in a)
    assert results == json_block(doc, "### 4. Results out")
    lift: dict[str, Any] = next(a for a in answers if "conversionRate" in a)
    shown = json_block(doc, "### 5. Lift")
    assert lift["campaignId"] == "summer" and lift.keys() == shown.keys()
    groups = (lift["test"], lift["control"])
    # Who is held out is drawn at random per campaign: only the totals are the document's.
    assert sum(g["customers"] for g in groups) == 43, lift
    assert sum(g["buyers"] for g in groups) == 20, lift
    assert sum(int(m["amount"]) for g in groups for m in g["revenue"]) == 20 * 1500
    assert lift["conversionRate"].keys() == shown["conversionRate"].keys()
    # The plan is a function of the history the walkthrough made (relative to now).
    plan = next(a for a in answers if "baselineRate" in a)
    assert plan == json_block(doc, "### 7. Planning a test"), plan


def test_audiences_walkthrough_does_what_it_shows(live_server: LiveServer, tmp_path: Path) -> None:
    doc = (DOCS / "audiences.md").read_text().replace(DOC_URL, live_server.url)

    _, printed = walk(live_server, tmp_path, doc, "## Walkthrough: the demo's", "## In the console")

    cat = json_answers(printed)[-1]
    for receipt in cat["customers"][0]["receipts"]:
        if receipt["status"] == "pending":  # the worker had not sent it yet: a moment's luck
            receipt.update(status="sent", sentAt=receipt["createdAt"])
    assert matches(json_block(doc, "## A person's data"), cat), cat
    assert (tmp_path / "audience-repeat-meta.csv").read_text().count("\n") == 2


def test_webhooks_walkthrough_receives_and_verifies_a_delivery(
    one_box_server: LiveServer, tmp_path: Path
) -> None:
    port = str(free_port())
    doc = (DOCS / "webhooks.md").read_text().replace("9000", port)

    _, printed = walk(one_box_server, tmp_path, doc, "## Trying it on one machine", "## Delivery")

    assert "verified connection.revoked" in printed and '"reason": "partner"' in printed
    assert "REFUSED" not in printed
