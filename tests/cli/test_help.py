"""Every command's `--help` names its values by what they are (URL, CLIENT_ID, N), never
by a Python type (`<bool>`, `<list[str]>`) or a parameter's name (`{client_id}`), and
says what each argument and option is; `worker --help` names every task it runs."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from typer._click import Command, Context
from typer.core import TyperGroup as Group
from typer.main import get_command
from typer.testing import CliRunner

from partnerlink.cli import app
from partnerlink.worker import registered_tasks

RUNNER = CliRunner()
# What typer's rich help printed in place of a metavar.
PLACEHOLDER = re.compile(r"<[a-z]+(?:\[[a-z, ]+\])?(?: range)?>|\{[a-z_]+\}")


def _commands() -> Iterator[tuple[str, ...]]:
    """The path of every command and group, the root's included."""
    root = get_command(app)

    def walk(command: Command, path: tuple[str, ...]) -> Iterator[tuple[str, ...]]:
        yield path
        if isinstance(command, Group):
            context = Context(command)
            for name in command.list_commands(context):
                child = command.get_command(context, name)
                assert child is not None, name
                yield from walk(child, (*path, name))

    yield from walk(root, ())


COMMANDS = list(_commands())


def _help(*path: str) -> str:
    done = RUNNER.invoke(app, [*path, "--help"], prog_name="partnerlink", env={"COLUMNS": "100"})
    assert done.exit_code == 0, done.output
    return done.output


def test_every_command_is_walked() -> None:
    assert ("partners", "update") in COMMANDS and ("destinations", "sync") in COMMANDS
    assert ("worker",) in COMMANDS and () in COMMANDS and len(COMMANDS) > 20


@pytest.mark.parametrize("path", COMMANDS, ids=lambda path: " ".join(path) or "partnerlink")
def test_help_shows_metavars_and_help_text(path: tuple[str, ...]) -> None:
    shown = _help(*path)
    assert shown.startswith(f"Usage: partnerlink {' '.join(path)}".rstrip() + " ")
    assert not PLACEHOLDER.search(shown), shown
    assert "--help  " in shown or "--help " in shown
    command = get_command(app)
    context = Context(command)
    for name in path:
        assert isinstance(command, Group)
        found = command.get_command(context, name)
        assert found is not None
        command = found
    for param in command.params:
        assert getattr(param, "help", None), f"{' '.join(path)}: {param.name} has no help text"
        if param.param_type_name == "argument":
            assert param.metavar and param.metavar.isupper(), param.name
            assert f" {param.metavar}" in shown.splitlines()[0]


@pytest.mark.parametrize(
    ("path", "lines"),
    [
        (("partners", "update"), ["partners update [OPTIONS] CLIENT_ID", "--webhook-url URL"]),
        (
            ("partners", "create"),
            ["--pos-type SLUG", "--frame-origin ORIGIN", "--redirect-uri URL"],
        ),
        (("partners", "rotate-secret"), ["CLIENT_ID  The partner's client id"]),
        (("destinations", "sync"), ["sync [OPTIONS] DESTINATION_ID"]),
        (("webhooks", "retry"), ["retry [OPTIONS] EVENT_ID"]),
        (("webhooks", "list"), ["--limit N", "--failed  "]),
        (("touches", "import"), ["import [OPTIONS] FILE"]),
        (("merchants", "create"), ["--email EMAIL", "--password PASSWORD", "--name NAME"]),
        (("serve",), ["--host ADDRESS", "--port PORT", "--workers N"]),
    ],
)
def test_named_metavars(path: tuple[str, ...], lines: list[str]) -> None:
    shown = _help(*path)
    for line in lines:
        assert line in shown, shown


def test_worker_help_names_every_task_it_runs() -> None:
    shown = " ".join(_help("worker").split()).lower()
    for name, _task in registered_tasks():
        assert name in shown, name
    assert "uploads cut off midway" in shown  # the partial uploads' sweep
