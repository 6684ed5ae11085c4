"""The `partnerlink` command. One file per command group; each is thin and calls services.

A command's module is imported only when that command runs (`CommandGroup`): the
command line is started hundreds of times by operators' scripts and by the test
suite, and importing every group's services (the orders journal, the ad platforms'
clients, the server) cost each start ~0.4 s of CPU that most commands never used.
"""

from __future__ import annotations

import typer

from partnerlink.cli.common import CommandGroup, LazyCommand


class PartnerlinkCommand(CommandGroup):
    # Every command: its name, the module holding it, and its one line in `--help`. A
    # group's module holds a Typer `app` of its subcommands; `serve`, `worker` and `demo`
    # are single commands, named in their module's `app` too.
    commands_by_name = {
        "serve": LazyCommand("partnerlink.cli.serve", None),
        "worker": LazyCommand("partnerlink.cli.worker", None),
        "db": LazyCommand("partnerlink.cli.db", "Database migrations."),
        "partners": LazyCommand("partnerlink.cli.partners", "Approved integration partners."),
        "merchants": LazyCommand("partnerlink.cli.merchants", "Merchant accounts."),
        "touches": LazyCommand(
            "partnerlink.cli.touches", "Ad touches used to classify conversions."
        ),
        "sms": LazyCommand("partnerlink.cli.sms", "E-receipt text messages."),
        "webhooks": LazyCommand("partnerlink.cli.webhooks", "Webhook events and their delivery."),
        "destinations": LazyCommand(
            "partnerlink.cli.destinations", "Ad-platform destinations (Meta, Google)."
        ),
        "demo": LazyCommand("partnerlink.cli.demo", None),
    }


app = typer.Typer(
    cls=PartnerlinkCommand,
    help="PartnerLink: connect partners' systems to merchant accounts.",
    rich_markup_mode=None,  # plain help, like every command's (cli/help_text.py)
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root() -> None:
    """Nothing to do before a command: it makes `app` a group of the commands above."""


def main() -> None:
    app()
