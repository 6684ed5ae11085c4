"""Parsing and normalizing an upload in a child process, so that it uses another core.

Parsing and normalization are about half of ingestion's CPU time; in a child
process they overlap with matching and writing in the worker. The child is a
plain `python -m partnerlink.customers.reader_process` (not multiprocessing's
spawn, which would re-import whatever script started the parent). Batches come
back pickled over a pipe that holds about one batch, so the child stays at most
a batch or two ahead (bounded memory); it exits when the pipe breaks, also when
the worker is killed.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import subprocess
import sys
from collections.abc import Callable, Generator
from multiprocessing.connection import Connection
from typing import Any

from partnerlink.customers.reader import ParsedBatch, UploadFileInvalid, read_checked_batches
from partnerlink.customers.storage import UploadStorage

# Below this size the child's start (~0.3 s of imports) costs more than it saves.
SUBPROCESS_MIN_BYTES = 4 * 1024 * 1024


def read_batches_elsewhere(
    storage: UploadStorage,
    key: str,
    *,
    default_region: str | None,
    skip: int,
    batch_size: int,
    keep_alive: Callable[[], None],
) -> Generator[ParsedBatch, None, None]:
    """Like reader.read_checked_batches (same batches, same errors, `keep_alive` called
    while the child reads the file), computed by a child process."""
    storage.open(key).close()  # a missing file raises FileNotFoundError here, not in the child
    read_end, write_end = os.pipe()
    job = pickle.dumps((storage, key, default_region, skip, batch_size))
    try:
        child = subprocess.Popen(
            [sys.executable, "-m", "partnerlink.customers.reader_process", str(write_end)],
            stdin=subprocess.PIPE,
            pass_fds=(write_end,),
        )
    finally:
        os.close(write_end)
    receiver = Connection(read_end, writable=False)
    try:
        assert child.stdin is not None
        child.stdin.write(job)
        child.stdin.close()
        while True:
            try:
                kind, payload = receiver.recv()
            except EOFError:
                raise RuntimeError("the upload reader process ended unexpectedly") from None
            if kind == "batch":
                yield payload
            elif kind == "alive":
                keep_alive()
            elif kind == "invalid":
                raise UploadFileInvalid(payload)
            elif kind == "end":
                return
            else:
                raise RuntimeError(f"the upload reader process failed: {payload}")
    finally:
        receiver.close()
        try:
            child.wait(timeout=5)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def _produce(job: Any, sender: Connection) -> None:
    storage, key, default_region, skip, batch_size = job
    try:
        with storage.open(key) as stream:
            for batch in read_checked_batches(
                stream,
                default_region=default_region,
                skip=skip,
                batch_size=batch_size,
                keep_alive=lambda: sender.send(("alive", None)),
            ):
                sender.send(("batch", batch))
        sender.send(("end", None))
    except UploadFileInvalid as error:
        sender.send(("invalid", str(error)))
    except (BrokenPipeError, ConnectionResetError):
        return  # the worker is gone (stopped, or killed)
    except Exception as error:
        sender.send(("error", type(error).__name__))


def main() -> None:
    sender = Connection(int(sys.argv[1]), readable=False)
    job = pickle.loads(sys.stdin.buffer.read())  # noqa: S301 - written by our own parent process
    try:
        _produce(job, sender)
    finally:
        with contextlib.suppress(OSError):
            sender.close()


if __name__ == "__main__":
    main()
