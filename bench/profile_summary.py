"""Summarises py-spy's raw (collapsed-stack) samples: where a server's time goes."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

# Inclusive shares worth naming: a sample counts for each marker found anywhere in its stack.
MARKERS = [
    ("HTTP protocol, uvicorn + httptools", ("httptools_impl.py",)),
    (
        "FastAPI body parsing + validation",
        ("_validate_request_body", "request_body_to_args", "json.loads"),
    ),
    ("  of which pydantic validation of the order", ("validate_python", "_validate_value")),
    ("middleware (metrics, headers, body limit)", ("middleware.py",)),
    ("thread-pool hop (anyio)", ("to_thread.py", "run_sync_in_worker_thread")),
    ("accept_orders (the batch's unit of work)", ("accept_orders",)),
    ("  authenticate_access_token", ("authenticate_access_token_sql",)),
    ("  store snapshot (apply_store_profile)", ("apply_store_profile",)),
    ("  resolve_customers", ("resolve_customers",)),
    ("  statements sent together (Sql.first_rows)", ("first_rows",)),
    ("  queue_receipts", ("queue_receipts",)),
    ("  commit", ("commit (",)),
    ("SQLAlchemy statement compilation", ("compiler.py",)),
    (
        "database driver calls (sqlite3 / psycopg)",
        ("do_execute", "cursor.py", "_execute (", "execute (psycopg"),
    ),
    ("background worker (send_due_receipts)", ("send_due_receipts",)),
    ("response encoding", ("serialize_response", "jsonable_encoder", "render (")),
]
# Leaf frames of a thread that is waiting, not working (py-spy's own idle test misses them).
IDLE_LEAVES = (
    "Condition.wait",
    "wait (threading.py",
    "_wait_for_tstate_lock",
    "Event.wait",
    "select (",
)
_FRAME = re.compile(r"^(?P<func>.*?) \((?P<file>[^:()]*)(?::\d+)?\)$")


def _parse(paths: list[Path]) -> tuple[list[tuple[list[str], int]], int]:
    stacks: list[tuple[list[str], int]] = []
    total = 0
    for path in paths:
        for line in path.read_text(errors="replace").splitlines():
            stack, _, count = line.rpartition(" ")
            if not count.isdigit():
                continue
            frames = stack.split(";")
            if frames[-1].startswith(IDLE_LEAVES):
                continue
            stacks.append((frames, int(count)))
            total += int(count)
    return stacks, total


def summarise(paths: list[Path], top: int = 14) -> list[str]:
    stacks, total = _parse(paths)
    if not total:
        return ["profile: no samples"]
    inclusive: Counter[str] = Counter()
    leaves: Counter[str] = Counter()
    for frames, count in stacks:
        text = ";".join(frames)
        for label, needles in MARKERS:
            if any(needle in text for needle in needles):
                inclusive[label] += count
        match = _FRAME.match(frames[-1])
        leaf = frames[-1] if match is None else f"{match['func']} ({Path(match['file']).name})"
        leaves[leaf] += count
    lines = [f"profile: {total:,} samples of the thread holding the GIL (py-spy --gil, 250 Hz)"]
    lines.append("  inclusive share (a sample counts for every part on its stack):")
    for label, _needles in MARKERS:
        if inclusive[label]:
            lines.append(f"    {100 * inclusive[label] / total:5.1f}%  {label}")
    lines.append(f"  top {top} functions by own time:")
    for leaf, count in leaves.most_common(top):
        lines.append(f"    {100 * count / total:5.1f}%  {leaf}")
    return lines
