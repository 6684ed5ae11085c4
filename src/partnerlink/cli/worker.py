"""`partnerlink worker`: the background worker as a process of its own."""

from __future__ import annotations

import logging
import signal
import threading

from partnerlink.cli.common import JsonOption, console, load_settings, migrate
from partnerlink.cli.help_text import Commands
from partnerlink.db.engine import make_engine, make_sessionmaker
from partnerlink.log_format import JsonFormatter
from partnerlink.security.redaction import install_log_redaction
from partnerlink.worker import BackgroundWorker

app = Commands()


@app.command(
    "worker",
    short_help="Run the background worker (orders, uploads, receipts, webhooks, ad "
    "platforms) as its own process.",
)
def worker(json_output: bool = JsonOption) -> None:
    """Run the background worker as its own process (then set PARTNERLINK_RUN_WORKER=false
    on the servers, which run one inside by default).

    It applies journaled orders (those acknowledged under load); ingests customer uploads
    (re-classifying the orders of a customer who gained an email or phone) and deletes
    the files of uploads cut off midway; sends e-receipts (text messages); delivers
    partners' webhooks (events, retried with backoff); brings ad platforms up to date
    (Meta and Google destinations: audiences and sales), reading Google verdicts on
    what was sent (match rates, dropped rows; 24 h at most); sends ad alerts (an email to
    the merchant when a destination needs them or is stale, once per change of state,
    with PARTNERLINK_SMTP_URL set); forgets idempotency keys once
    they expire (24 h); and counts large profiles' audience sizes again before they get
    stale.

    Several workers may run side by side: each claims its rows with a lease."""
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
