"""The storage interface for uploaded customer files."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from contextlib import aclosing
from typing import BinaryIO, Protocol


class UploadTooLarge(Exception):
    """The stream passed the size limit; nothing was kept."""


class UploadStorage(Protocol):
    """Stored customer files by key. Implementations must be picklable: the upload
    reader process (reader_process.py) receives the storage and opens the file itself."""

    async def save(self, key: str, chunks: AsyncIterator[bytes], *, max_bytes: int) -> int:
        """Stores the stream durably under `key`; returns its size in bytes."""
        ...

    def open(self, key: str) -> BinaryIO:
        """Opens a stored file for reading."""
        ...

    def delete(self, key: str) -> None:
        """Removes a stored file; a missing file is not an error."""
        ...

    def sweep_partial(self, older_than_seconds: float) -> int:
        """Removes partial files left by a killed upload; returns how many."""
        ...


async def blocks_of(
    chunks: AsyncIterator[bytes], *, block_bytes: int, max_bytes: int
) -> AsyncGenerator[bytes, None]:
    """The body's chunks (as the socket hands them) regathered into blocks of exactly
    `block_bytes`, then one last, shorter block (maybe empty), so a storage writes a block
    at a time and holds at most one in memory. Past `max_bytes`: UploadTooLarge."""
    size = 0
    buffer = bytearray()
    async for chunk in chunks:
        size += len(chunk)
        if size > max_bytes:
            raise UploadTooLarge
        buffer += chunk
        while len(buffer) >= block_bytes:
            yield bytes(buffer[:block_bytes])
            del buffer[:block_bytes]
    yield bytes(buffer)


async def write_blocks(
    chunks: AsyncIterator[bytes],
    write: Callable[[bytes], Awaitable[object]],
    *,
    block_bytes: int,
    max_bytes: int,
) -> int:
    """Hands `write` each block of the body (`blocks_of`), in order, the last one too (maybe
    empty); returns the body's size. Each storage's `save` is its `write` and its clean-up."""
    size = 0
    body = blocks_of(chunks, block_bytes=block_bytes, max_bytes=max_bytes)
    async with aclosing(body):
        async for block in body:
            size += len(block)
            await write(block)
    return size
