"""`partnerlink serve`."""

from __future__ import annotations

import copy
import os
from typing import Any
from urllib.parse import urlsplit

import typer
import uvicorn.config

from partnerlink.cli.common import JsonOption, console, load_settings, migrate
from partnerlink.cli.help_text import Commands
from partnerlink.cli.serving import run_server
from partnerlink.log_format import use_json_logs
from partnerlink.security.redaction import install_log_redaction
from partnerlink.settings import SERVER_PROCESS_ENV

# The web app itself is imported by uvicorn's server processes (`create_app`), not here.
app = Commands()


@app.command(
    "serve", short_help="Migrate the database if needed, then serve everything on one port."
)
def serve(
    host: str = typer.Option(
        "127.0.0.1", metavar="ADDRESS", help="Address to listen on (0.0.0.0: every one)."
    ),
    port: int = typer.Option(8000, metavar="PORT", help="Port to listen on."),
    workers: int = typer.Option(
        0,
        metavar="N",
        help="Server processes; 0 = 1 on SQLite (one writer), one per core on PostgreSQL.",
    ),
    json_output: bool = JsonOption,
) -> None:
    """Migrate the database if needed, then serve everything on one port."""
    settings = load_settings()
    migrate(settings)
    settings.signing_key  # noqa: B018 - create data/secret.key once, before workers race for it
    if workers <= 0:
        workers = 1 if settings.is_sqlite else (os.cpu_count() or 1)
    # JSON logs: nothing but JSON lines. The banner waits for the port (run_server).
    show_banner = not json_output and settings.log_format != "json"
    # The public URL left at its default while the port changed: the links would point
    # at the default port (README, "make run SERVE_ARGS"). Said once, at start.
    default_port = urlsplit(settings.public_url).port
    moved_port = (
        port if "public_url" not in settings.model_fields_set and port != default_port else None
    )
    install_log_redaction()
    os.environ[SERVER_PROCESS_ENV] = "1"  # inherited by uvicorn's worker processes
    run_server(
        "partnerlink.app:create_app",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        on_listening=lambda: (
            _print_banner(settings.public_url, host=host, moved_port=moved_port)
            if show_banner
            else None
        ),
        proxy_headers=False,  # X-Forwarded-For is trusted only from PARTNERLINK_TRUSTED_PROXIES
        server_header=False,
        log_config=log_config(settings.log_format),
    )


def log_config(log_format: str = "text") -> dict[str, Any]:
    """uvicorn's own logging, plus the service's INFO lines (outbox SMS, lockouts, uploads).

    Without a handler of their own, `partnerlink.*` records below WARNING went
    nowhere under uvicorn. Every handler (uvicorn's access and error lines too)
    redacts every record it prints. `json`: one JSON object a line (log_format.py).
    """
    config: dict[str, Any] = copy.deepcopy(uvicorn.config.LOGGING_CONFIG)
    config["filters"] = {"redact": {"()": "partnerlink.security.redaction.RedactingFilter"}}
    config["handlers"]["partnerlink"] = {
        "formatter": "default",
        "class": "logging.StreamHandler",
        "stream": "ext://sys.stderr",
    }
    for handler in config["handlers"].values():
        handler["filters"] = ["redact"]
    config["loggers"]["partnerlink"] = {
        "handlers": ["partnerlink"],
        "level": "INFO",
        "propagate": False,
    }
    return use_json_logs(config) if log_format == "json" else config


def _print_banner(public_url: str, *, host: str, moved_port: int | None) -> None:
    serving = public_url
    if moved_port is not None:
        if host in ("0.0.0.0", "::", ""):  # every address: this machine's own will do
            host = urlsplit(public_url).hostname or "127.0.0.1"
        serving = f"http://{f'[{host}]' if ':' in host else host}:{moved_port}"
    console.print(f"\n[bold green]PartnerLink[/bold green] is serving at {serving}")
    console.print(f"  Merchant console  {serving}/merchant")
    console.print(f"  API reference     {serving}/docs")
    console.print(f"  Health            {serving}/healthz")
    if moved_port is not None:
        console.print(
            f"\n[yellow]PARTNERLINK_PUBLIC_URL is its default, {public_url}[/yellow], so the"
            " links this service hands out (consent, upload, receipt) point there: set"
            f" PARTNERLINK_PUBLIC_URL={serving} (for `partnerlink demo` too)."
        )
    console.print(
        "\nNext: in another terminal, run [bold].venv/bin/partnerlink demo[/bold] for a demo "
        "partner, merchant and store, with ready-to-paste curl commands for both flows.\n"
    )
