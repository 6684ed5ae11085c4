"""Parsing and normalizing an upload in a child process, so that it uses another core.

Parsing and normalization are about half of ingestion's CPU time; in a child
process they overlap with matching and writing in the worker. The child is a
plain `python -m partnerlink.customers.ingestion.reader_process` (not multiprocessing's
spawn, which would re-import whatever script started the parent). Batches come
back pickled over a pipe that holds about one batch, so the child stays at most
a batch or two ahead (bounded memory); it exits when the pipe breaks, also when
the worker is killed.

With `check_beside` (a first attempt on PostgreSQL), the whole-file check runs in a
thread of the child while its main thread reads the batches, instead of before the
first batch. The child spends about half its time blocked on the full pipe (the
worker and the database are slower than the reading), and the check takes that
time: the first pass (~2 s of CPU at 1,000,000 records) no longer leaves the worker
and the database idle, and no second process adds its memory. The worker holds the
batches it applies in one transaction until FILE_CHECKED comes
(batch_commit.apply_until_checked), so that an invalid file still applies nothing.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pickle
import subprocess
import sys
import threading
from collections.abc import Callable, Generator, Iterator
from multiprocessing.connection import Connection
from typing import Any, BinaryIO, TypeVar

from partnerlink.customers.ingestion.reader import (
    ParsedBatch,
    UploadFileInvalid,
    check_file,
    read_batches,
    read_checked_batches,
)
from partnerlink.customers.storage import UploadStorage

PIPE_BYTES = 1048576  # Linux's default /proc/sys/fs/pipe-max-size
T = TypeVar("T")
# Below this size the child's start (~0.3 s of imports) costs more than it saves.
SUBPROCESS_MIN_BYTES = 4 * 1024 * 1024


class FileChecked:
    """Yielded once by read_batches_elsewhere(check_beside=True): the whole file passed
    the check, so the batches held so far may commit."""


FILE_CHECKED = FileChecked()
# How many batches may be read before the check has passed (the worker holds them
# uncommitted, locking what they wrote): past that, the child waits for the check. At
# 5,000 records a batch, ~5 s of writes; the check reads ~4x faster than the batches
# are applied, so it seldom binds.
HELD_BATCHES_MAX = 40


def read_batches_elsewhere(
    storage: UploadStorage,
    key: str,
    *,
    default_region: str | None,
    skip: int,
    batch_size: int,
    keep_alive: Callable[[], None],
    check_beside: bool = False,
    narrow_emails: bool = False,
    copy_lines: bool = False,
) -> Generator[ParsedBatch | FileChecked, None, None]:
    """Like reader.read_checked_batches (same batches, same errors, `keep_alive` called
    while the child reads the file), computed by a child process.

    `check_beside` (only where nothing was applied yet, `skip` == 0): the check runs
    while the batches are read; FILE_CHECKED comes once it has passed (at the latest
    before the end), UploadFileInvalid if it failed. Until then `keep_alive` is not
    called: the worker's open transaction holds the upload's row.
    """
    if check_beside and skip != 0:
        raise ValueError("the check runs beside the reading only from the file's start")
    storage.open(key).close()  # a missing file raises FileNotFoundError here, not in the child
    mode = "check_beside" if check_beside else "check_first"
    child = _Child.start(
        (mode, storage, key, default_region, skip, batch_size, narrow_emails, copy_lines)
    )
    checked = not check_beside
    try:
        while True:
            kind, payload = child.receive()
            if kind == "batch":
                yield payload
            elif kind == "checked":
                checked = True
                yield FILE_CHECKED
            elif kind == "alive":
                if checked:
                    keep_alive()
            elif kind == "invalid":
                raise UploadFileInvalid(payload)
            elif kind == "end":
                return
            else:
                raise RuntimeError(f"the upload reader process failed: {payload}")
    finally:
        child.close()


class Prefetched(Iterator[T]):
    """An iterator that can take its next item ahead of time: the worker receives the
    reader's next batch (and unpickles it: bench/README.md) while the database takes
    in a COPY (batch_queries.insert_customers' `meanwhile`), instead of after. What the
    source raises comes out of the next next(), not out of prefetch()."""

    def __init__(self, items: Iterator[T]) -> None:
        self._items = items
        self._ahead: list[T] = []
        self._error: Exception | None = None
        self._ended = False

    def prefetch(self) -> None:
        if self._ahead or self._error is not None or self._ended:
            return
        try:
            self._ahead.append(next(self._items))
        except StopIteration:
            self._ended = True
        except Exception as error:  # raised by the next next()
            self._error = error

    def __next__(self) -> T:
        if self._ahead:
            return self._ahead.pop()
        if self._error is not None:
            error, self._error = self._error, None
            raise error
        if self._ended:
            raise StopIteration
        return next(self._items)


class _Child:
    """One `python -m partnerlink.customers.ingestion.reader_process` and the pipe it answers on."""

    def __init__(self, process: subprocess.Popen[bytes], receiver: Connection) -> None:
        self.process = process
        self.receiver = receiver

    @classmethod
    def start(cls, job: tuple[Any, ...]) -> _Child:
        read_end, write_end = os.pipe()
        with contextlib.suppress(OSError):  # Linux; a smaller pipe only costs waits
            # Room for a whole pickled batch (bench/README.md) instead of Linux's
            # default, so that the child can run a batch ahead. Measured against the
            # default, the difference was within the noise (bench/README.md, fifteenth
            # session).
            fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
        try:
            process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "partnerlink.customers.ingestion.reader_process",
                    str(write_end),
                ],
                stdin=subprocess.PIPE,
                pass_fds=(write_end,),
                # One malloc arena: the check thread's own held more at the peak
                # (measured: bench/README.md), and under the GIL the two threads seldom
                # allocate at once.
                # The environment as it is now (the storage's credentials may be in it).
                env={**os.environ, "MALLOC_ARENA_MAX": "1"},
            )
        except BaseException:
            os.close(read_end)
            raise
        finally:
            os.close(write_end)
        child = cls(process, Connection(read_end, writable=False))
        assert process.stdin is not None
        process.stdin.write(pickle.dumps(job))
        process.stdin.close()
        return child

    def receive(self) -> tuple[str, Any]:
        try:
            kind, payload = self.receiver.recv()
        except EOFError:
            raise RuntimeError("the upload reader process ended unexpectedly") from None
        return kind, payload

    def close(self) -> None:
        self.receiver.close()  # a child still sending gets a broken pipe and ends
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class _CheckThread:
    """reader.check_file over a second handle of the file, in a thread."""

    def __init__(self, stream: BinaryIO) -> None:
        self.fault: str | None = None  # why the file is invalid
        self.error: BaseException | None = None  # the check could not finish (storage)
        self._thread = threading.Thread(target=self._check, args=(stream,), daemon=True)
        self._thread.start()

    def _check(self, stream: BinaryIO) -> None:
        try:
            check_file(stream, lambda: None)
        except UploadFileInvalid as error:
            self.fault = str(error)
        except BaseException as error:  # reported by _send_verdict, not by the thread
            self.error = error

    def done(self) -> bool:
        return not self._thread.is_alive()

    def wait(self) -> None:
        self._thread.join()


def _produce(job: Any, sender: Connection) -> None:
    mode, storage, key, default_region, skip, batch_size, narrow_emails, copy_lines = job
    try:
        with storage.open(key) as stream, contextlib.ExitStack() as stack:
            options: dict[str, Any] = {
                "default_region": default_region,
                "skip": skip,
                "batch_size": batch_size,
                "keep_alive": lambda: sender.send(("alive", None)),
                "narrow_emails": narrow_emails,
                "copy_lines": copy_lines,
            }
            if mode == "check_first":
                for batch in read_checked_batches(stream, **options):
                    sender.send(("batch", batch))
            else:
                check = _CheckThread(stack.enter_context(storage.open(key)))
                _send_beside_check(read_batches(stream, **options), check, sender)
        sender.send(("end", None))
    except UploadFileInvalid as error:
        sender.send(("invalid", str(error)))
    except (BrokenPipeError, ConnectionResetError):
        return  # the worker is gone (stopped, or killed)
    except Exception as error:
        sender.send(("error", type(error).__name__))


def _send_beside_check(
    batches: Iterator[ParsedBatch], check: _CheckThread, sender: Connection
) -> None:
    """Sends the batches while the check runs, and its verdict as soon as it is known
    (before the next batch; at the latest before the end or the HELD_BATCHES_MAX+1st
    batch). A fault ends the sending, whichever of the two finds it first: both read
    the same file with the same parser, so they give the same reason."""
    pending = True  # the verdict is not sent yet
    for sent, batch in enumerate(batches):
        if pending and (check.done() or sent >= HELD_BATCHES_MAX):
            _send_verdict(check, sender)
            pending = False
        sender.send(("batch", batch))  # blocked on the full pipe, the check runs
    if pending:
        _send_verdict(check, sender)


def _send_verdict(check: _CheckThread, sender: Connection) -> None:
    check.wait()
    if check.error is not None:
        raise check.error
    if check.fault is not None:
        raise UploadFileInvalid(check.fault)
    sender.send(("checked", None))


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
