"""`partnerlink worker`: the background worker as a process of its own."""

from __future__ import annotations

import logging
import signal
import threading

import typer

from partnerlink.cli.common import JsonOption, console, load_settings, migrate
from partnerlink.db.engine import make_engine, make_sessionmaker
from partnerlink.log_format import JsonFormatter
from partnerlink.security.redaction import install_log_redaction
from partnerlink.worker import BackgroundWorker

app = typer.Typer()


@app.command("worker")
def worker(json_output: bool = JsonOption) -> None:
    """Run the background worker (uploads, e-receipts) as its own process."""
    settings = load_settings()
    logging.basicConfig(level=logging.INFO)
    if settings.log_format == "json":
        for handler in logging.getLogger().handlers:
            handler.setFormatter(JsonFormatter())
    install_log_redaction()
    migrate(settings)
    engine = make_engine(settings.database_url)
    background = BackgroundWorker(make_sessionmaker(engine), settings)
    stopped = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stopped.set())
    if not json_output:
        console.print("PartnerLink worker running; Ctrl-C to stop.")
    background.start()
    stopped.wait()
    background.stop()
    engine.dispose()
