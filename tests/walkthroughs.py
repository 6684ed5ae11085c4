"""Running a document's walkthrough as a reader pastes it: its ```sh blocks, in order, in one
bash, in a folder whose `.venv/bin/partnerlink` is this checkout's command line on the live
server's database (tests/test_readme.py, tests/test_docs_walkthroughs.py)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any


def sh_blocks(text: str, first: str, until: str) -> list[str]:
    """The ```sh blocks of `text` from the text `first` to the text `until`."""
    part = text[text.index(first) : text.index(until)]
    return re.findall(r"```sh\n(.*?)```", part, re.S)


def json_block(text: str, after: str) -> Any:
    """The first ```json block after the text `after`, parsed."""
    part = text[text.index(after) :]
    found = re.search(r"```json\n(.*?)```", part, re.S)
    assert found, after
    return json.loads(found.group(1))


def checkout_command(folder: Path) -> None:
    """`.venv/bin/partnerlink` in `folder`, as `make run` leaves it in a checkout."""
    command = folder / ".venv" / "bin" / "partnerlink"
    command.parent.mkdir(parents=True)
    command.write_text(f'#!/bin/sh\nexec {sys.executable} -m partnerlink "$@"\n')
    command.chmod(0o755)


def run_blocks(
    blocks: list[str], folder: Path, env: dict[str, str], timeout: int = 300
) -> subprocess.CompletedProcess[str]:
    """The blocks pasted into one bash that stops at the first failing command; whatever
    they left running (a webhook receiver in the background) is ended with it."""
    script = "\n".join(blocks)
    with subprocess.Popen(
        ["bash", "-eo", "pipefail", "-c", script],
        cwd=folder,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    ) as shell:
        try:
            stdout, stderr = shell.communicate(timeout=timeout)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(shell.pid, signal.SIGTERM)
    return subprocess.CompletedProcess(shell.args, shell.returncode, stdout, stderr)


def shown_outputs(blocks: list[str]) -> list[str]:
    """What the blocks' comment lines say the commands print: every line that is only a
    comment, a line starting `#  ` continuing the one before (a long JSON answer wrapped)."""
    shown: list[str] = []
    for line in "\n".join(blocks).splitlines():
        if line.startswith("#  ") and shown:
            shown[-1] += line[3:]
        elif line.startswith("# "):
            shown.append(line[2:])
    return shown


_TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def matches(shown: Any, real: Any) -> bool:
    """`real` is what a document shows as `shown`: equal, but for what differs at every run
    (a shown string with `...`, a timestamp or a UUID stands for any such string)."""
    if isinstance(shown, dict):
        return (
            isinstance(real, dict)
            and shown.keys() == real.keys()
            and all(matches(value, real[key]) for key, value in shown.items())
        )
    if isinstance(shown, list):
        return (
            isinstance(real, list)
            and len(shown) == len(real)
            and all(matches(a, b) for a, b in zip(shown, real, strict=True))
        )
    if isinstance(shown, str) and isinstance(real, str):
        for varying in (_TIMESTAMP, _UUID):
            if varying.match(shown):
                return bool(varying.match(real))
        if "..." in shown:
            return True
    return bool(shown == real)


def unshown_outputs(blocks: list[str], stdout: str) -> list[str]:
    """The outputs the blocks' comments show that the run did not print: a JSON one is
    looked for among the JSON answers (`matches`), any other among the printed lines."""
    answers = json_answers(stdout)
    lines = stdout.splitlines()
    missing = []
    for text in shown_outputs(blocks):
        if text.startswith(("{", "[")):
            wanted = json.loads(text)
            if not any(matches(wanted, answer) for answer in answers):
                missing.append(text)
            continue
        # `...` in a printed line stands for what differs at every run (an id).
        pattern = re.compile(".*?".join(re.escape(part) for part in text.split("...")))
        if not any(pattern.fullmatch(line) for line in lines):
            missing.append(text)
    return missing


def json_answers(stdout: str) -> list[Any]:
    """Every line of the output that is a JSON object or array, parsed."""
    answers = []
    for line in stdout.splitlines():
        if line.startswith(("{", "[")):
            try:
                answers.append(json.loads(line))
            except ValueError:  # a line of text that merely starts like JSON
                continue
    return answers
