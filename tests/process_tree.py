"""The processes of a `partnerlink serve --workers N`, read from /proc (Linux).

`serve` starts a forkserver (and multiprocessing's resource tracker); the server
processes are the forkserver's children (cli/serving.py).
"""

from __future__ import annotations

import os
from pathlib import Path


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def children(pid: int) -> set[int]:
    """The children of `pid`, from /proc/<pid>/task/*/children (zombies included)."""
    found: set[int] = set()
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for task in tasks:
        try:
            found.update(
                int(c) for c in Path(f"/proc/{pid}/task/{task}/children").read_text().split()
            )
        except OSError:
            continue
    return found


def descendants(pid: int) -> set[int]:
    """Children, their children, and so on."""
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children(todo.pop()) - found:
            found.add(child)
            todo.append(child)
    return found


def server_processes(serve: int) -> set[int]:
    """The server processes of the `serve` whose pid is given: its forkserver's children."""
    forkservers = {c for c in children(serve) if "multiprocessing.forkserver" in cmdline(c)}
    return {c for f in forkservers for c in children(f) if cmdline(c)}
