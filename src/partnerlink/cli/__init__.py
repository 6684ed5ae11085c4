"""The `partnerlink` command. One file per command group; each is thin and calls services."""

from __future__ import annotations

import typer

from partnerlink.cli import (
    db,
    demo,
    destinations,
    merchants,
    partners,
    serve,
    sms,
    touches,
    webhooks,
)
from partnerlink.cli.common import CommandGroup

app = typer.Typer(
    cls=CommandGroup,
    help="PartnerLink: connect partners' systems to merchant accounts.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
serve.register(app)
app.add_typer(db.app, name="db", help="Database migrations.")
app.add_typer(partners.app, name="partners", help="Approved integration partners.")
app.add_typer(merchants.app, name="merchants", help="Merchant accounts.")
app.add_typer(touches.app, name="touches", help="Ad touches used to classify conversions.")
app.add_typer(sms.app, name="sms", help="E-receipt text messages.")
app.add_typer(webhooks.app, name="webhooks", help="Webhook events and their delivery.")
app.add_typer(
    destinations.app, name="destinations", help="Ad-platform destinations (Meta, Google)."
)
demo.register(app)


def main() -> None:
    app()
