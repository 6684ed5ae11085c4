"""Customer files in a local directory (the default storage)."""

from __future__ import annotations

import os
import secrets
import stat
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import BinaryIO

from anyio import CancelScope, to_thread

from partnerlink.customers.storage.base import write_blocks

# Chunks from the socket are gathered to this size before one write (and one thread hop).
WRITE_BUFFER_BYTES = 1 << 20


class LocalUploadStorage:
    """Files in a local directory, written so that a 200 means they survive a crash."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _path(self, key: str) -> Path:
        path = (self.root / key).resolve()
        if not path.is_relative_to(self.root.resolve()):
            raise ValueError("storage key outside the upload directory")
        return path

    async def save(self, key: str, chunks: AsyncIterator[bytes], *, max_bytes: int) -> int:
        """Streams to a temporary file, fsyncs it, then renames it into place.

        Never holds more than one write buffer in memory; a partial file (size
        limit, client gone, any error) is deleted.
        """
        final = self._path(key)
        temp = final.with_name(f"{final.name}.{secrets.token_hex(8)}.part")
        await to_thread.run_sync(lambda: final.parent.mkdir(parents=True, exist_ok=True))
        handle = await to_thread.run_sync(lambda: open(temp, "xb"))  # noqa: SIM115
        try:
            size = await write_blocks(
                chunks,
                lambda block: to_thread.run_sync(handle.write, block),
                block_bytes=WRITE_BUFFER_BYTES,
                max_bytes=max_bytes,
            )
            await to_thread.run_sync(_finish, handle, b"", temp, final)
        except BaseException:
            # Shielded: a cancelled request (client gone) must still clean up.
            with CancelScope(shield=True):
                await to_thread.run_sync(_discard, handle, temp)
            raise
        return size

    def open(self, key: str) -> BinaryIO:
        return self._path(key).open("rb")

    def delete(self, key: str) -> None:
        self._path(key).unlink(missing_ok=True)

    def sweep_partial(self, older_than_seconds: float) -> int:
        """Deletes `*.part` files whose last write is older than `older_than_seconds`.

        A PUT cut off by SIGKILL or power loss never runs its clean-up, so its
        temporary file stays. A live PUT touches the mtime with every write
        buffer it flushes. Only regular `.part` files are touched; one that
        vanishes meanwhile (finished, discarded, another sweeper) is skipped.
        """
        cutoff = time.time() - older_than_seconds
        removed = 0
        for directory, _, names in os.walk(self.root):  # a missing root yields nothing
            for name in names:
                if not name.endswith(".part"):
                    continue
                path = Path(directory, name)
                try:
                    info = path.lstat()
                    if not stat.S_ISREG(info.st_mode) or info.st_mtime >= cutoff:
                        continue
                    path.unlink()
                except FileNotFoundError:
                    continue
                removed += 1
        return removed


def _finish(handle: BinaryIO, tail: bytes, temp: Path, final: Path) -> None:
    handle.write(tail)
    handle.flush()
    os.fsync(handle.fileno())
    handle.close()
    temp.rename(final)
    # The rename itself must reach the disk too.
    directory = os.open(final.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def _discard(handle: BinaryIO, temp: Path) -> None:
    handle.close()
    temp.unlink(missing_ok=True)
