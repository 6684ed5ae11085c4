"""How every command's `--help` names its values: by what they are (`URL`, `CLIENT_ID`,
`N`), in click's plain layout.

Typer's rich help printed each value by its Python type or parameter name instead:
`--ereceipt <bool>` (a flag takes no value), `--frame-origin <list[str]>`,
`partners update [OPTIONS] {client_id}`. A module's commands are made with `Commands`,
whose every command is a `HelpCommand`.
"""

from __future__ import annotations

from typing import Any

import typer
from typer._click import Context, HelpFormatter, Parameter
from typer.core import TyperCommand


def _metavar(param: Parameter) -> str:
    return param.metavar or (param.name or "value").upper()


class HelpCommand(TyperCommand):
    """A command whose help shows `CLIENT_ID` for an argument and `--limit N` for an
    option: its declared metavar, else its name in capitals; a flag shows none."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["rich_markup_mode"] = None  # click's layout: a flag shows no type there
        super().__init__(*args, **kwargs)
        for param in self.params:
            if param.param_type_name == "argument" or not getattr(param, "is_flag", False):
                param.metavar = _metavar(param)

    def collect_usage_pieces(self, ctx: Context) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if param.param_type_name == "argument":
                name = _metavar(param) + ("..." if param.nargs != 1 else "")
                pieces.append(name if param.required else f"[{name}]")
        return pieces

    def format_options(self, ctx: Context, formatter: HelpFormatter) -> None:
        arguments, options = [], []
        for param in self.get_params(ctx):
            if getattr(param, "hidden", False):
                continue
            if param.param_type_name == "argument":
                arguments.append((_metavar(param), getattr(param, "help", None) or ""))
            elif (record := param.get_help_record(ctx)) is not None:
                options.append(record)
        if arguments:
            with formatter.section("Arguments"):
                formatter.write_dl(arguments)
        if options:
            with formatter.section("Options"):
                formatter.write_dl(options)


class Commands(typer.Typer):
    """A module's Typer app: plain help for the group, and every command a HelpCommand."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(rich_markup_mode=None, **kwargs)

    def command(self, *args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("cls", HelpCommand)
        return super().command(*args, **kwargs)
