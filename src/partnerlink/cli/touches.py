"""`partnerlink touches import FILE`: ad touches (JSON lines) used to classify conversions."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn

from partnerlink.cli.common import (
    CommandFailed,
    JsonOption,
    console,
    err_console,
    load_settings,
    print_json,
    unit_of_work,
)
from partnerlink.cli.help_text import Commands
from partnerlink.measurement.service import import_touch_lines

app = Commands(no_args_is_help=True)

PROGRESS_FROM_BYTES = 1_000_000  # smaller files finish before a bar is worth drawing
SHOWN_REJECTIONS = 50


@app.command("import")
def import_(
    file: Path = typer.Argument(..., metavar="FILE", help="JSON lines: one touch object per line."),
    json_output: bool = JsonOption,
) -> None:
    """Import ad touches (the merchant API's code path); rejected lines are listed by number."""
    if not file.is_file():
        raise CommandFailed(f"no such file: {file}", code="no_such_file")
    settings = load_settings()
    size = file.stat().st_size
    show_progress = not json_output and size >= PROGRESS_FROM_BYTES
    with (
        file.open("rb") as handle,
        Progress(
            "[progress.description]{task.description}",
            BarColumn(),
            DownloadColumn(),
            TimeRemainingColumn(),
            console=err_console,
            disable=not show_progress,
            transient=True,
        ) as progress,
        unit_of_work(settings) as session,
    ):
        task = progress.add_task("Importing touches", total=size)

        def checkpoint() -> None:
            # Commit batch by batch: a long import must not hold SQLite's write lock throughout.
            session.commit()
            progress.update(task, completed=handle.tell())

        result = import_touch_lines(
            session,
            handle,
            default_click_days=settings.attribution_window_days,
            checkpoint=checkpoint,
        )
    if json_output:
        # `errors` holds the first rejected lines (the import keeps 1,000);
        # `rejected` is the exact count.
        errors = [{"line": number, "reason": reason} for number, reason in result.rejections]
        print_json(
            {
                "imported": result.imported,
                "duplicates": result.duplicates,
                "rejected": result.rejected,
                "errors": errors,
            }
        )
        return
    console.print(
        f"Imported {result.imported} touches; {result.duplicates} already stored;"
        f" rejected {result.rejected};"
        f" {result.reclassified} orders re-classified."
    )
    for number, reason in result.rejections[:SHOWN_REJECTIONS]:
        console.print(f"  line {number}: {reason}")
    if result.rejected > SHOWN_REJECTIONS:
        lines = ", ".join(str(n) for n, _ in result.rejections[SHOWN_REJECTIONS:])
        more = result.rejected - len(result.rejections)
        console.print(f"  also rejected: lines {lines}" + (f" and {more} more" if more else ""))
