"""The storage interface for uploaded customer files."""

from __future__ import annotations

from collections.abc import AsyncIterator
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
