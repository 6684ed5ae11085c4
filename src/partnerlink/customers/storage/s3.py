"""Customer files in an S3-compatible bucket, so that any worker on any machine can ingest them.

The PUT streams into a multipart upload (one part buffered at a time) and the
worker streams the object back with `get_object`; nothing touches a server's
disk. boto3 clients are thread-safe and costly to build, so one is made lazily
per process and endpoint and shared; the storage itself pickles without it
(the upload reader process builds its own).
"""

from __future__ import annotations

import io
import threading
import time
from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any, BinaryIO
from urllib.parse import urlsplit

import boto3
from anyio import CancelScope, to_thread
from botocore.config import Config
from botocore.exceptions import ClientError

from partnerlink.customers.storage.base import write_blocks

# S3 parts are at least 5 MiB (but the last); this is the most a PUT holds in memory.
PART_BYTES = 8 * 1024 * 1024
# What the worker reads from the object's stream at a time.
READ_BUFFER_BYTES = 256 * 1024

_clients: dict[str | None, Any] = {}
_clients_lock = threading.Lock()


def _client(endpoint_url: str | None) -> Any:
    """One client per endpoint and process (credentials from the standard AWS_* variables)."""
    with _clients_lock:
        client = _clients.get(endpoint_url)
        if client is None:
            session = boto3.session.Session()
            client = session.client(
                "s3",
                endpoint_url=endpoint_url,
                config=Config(retries={"mode": "standard"}, max_pool_connections=32),
            )
            _clients[endpoint_url] = client
        return client


def parse_s3_url(url: str) -> tuple[str, str]:
    """`s3://bucket/prefix` → (bucket, prefix without slashes at either end)."""
    parts = urlsplit(url)
    if parts.scheme != "s3" or not parts.netloc:
        raise ValueError(f"not an S3 location like s3://bucket/prefix: {url!r}")
    return parts.netloc, parts.path.strip("/")


def _missing(error: ClientError) -> bool:
    code = str(error.response.get("Error", {}).get("Code", ""))
    return code in {"NoSuchKey", "404", "NotFound", "NoSuchUpload"}


class S3UploadStorage:
    """Objects under `prefix` in `bucket`; a 200 on the PUT means the object is complete."""

    def __init__(self, bucket: str, prefix: str = "", endpoint_url: str | None = None) -> None:
        self.bucket = bucket
        self.prefix = prefix
        self.endpoint_url = endpoint_url

    @property
    def client(self) -> Any:
        return _client(self.endpoint_url)

    def object_key(self, key: str) -> str:
        return f"{self.prefix}/{key}" if self.prefix else key

    async def save(self, key: str, chunks: AsyncIterator[bytes], *, max_bytes: int) -> int:
        """Streams into a multipart upload, one part in memory at a time.

        A file smaller than one part is a single `put_object`. Past `max_bytes`,
        or on any error (the client gone too), the multipart upload is aborted
        and nothing is kept.
        """
        name = self.object_key(key)
        upload_id: str | None = None
        parts: list[dict[str, Any]] = []

        async def send(block: bytes) -> None:
            nonlocal upload_id
            if len(block) == PART_BYTES:  # a whole part: the file goes multipart
                if upload_id is None:
                    upload_id = await to_thread.run_sync(self._start, name)
                parts.append(await to_thread.run_sync(self._part, name, upload_id, parts, block))
            elif upload_id is None:  # the last block, and the only one
                await to_thread.run_sync(self._put, name, block)
            else:  # the last block of a multipart upload
                if block:
                    parts.append(
                        await to_thread.run_sync(self._part, name, upload_id, parts, block)
                    )
                await to_thread.run_sync(self._complete, name, upload_id, parts)

        try:
            size = await write_blocks(chunks, send, block_bytes=PART_BYTES, max_bytes=max_bytes)
        except BaseException:
            if upload_id is not None:
                # Shielded: a cancelled request (client gone) must still clean up.
                with CancelScope(shield=True):
                    await to_thread.run_sync(self._abort, name, upload_id)
            raise
        return size

    def _put(self, name: str, data: bytes) -> None:
        self.client.put_object(Bucket=self.bucket, Key=name, Body=data)

    def _start(self, name: str) -> str:
        answer = self.client.create_multipart_upload(Bucket=self.bucket, Key=name)
        return str(answer["UploadId"])

    def _part(
        self, name: str, upload_id: str, parts: list[dict[str, Any]], data: bytes
    ) -> dict[str, Any]:
        number = len(parts) + 1
        answer = self.client.upload_part(
            Bucket=self.bucket, Key=name, UploadId=upload_id, PartNumber=number, Body=data
        )
        return {"PartNumber": number, "ETag": answer["ETag"]}

    def _complete(self, name: str, upload_id: str, parts: list[dict[str, Any]]) -> None:
        self.client.complete_multipart_upload(
            Bucket=self.bucket, Key=name, UploadId=upload_id, MultipartUpload={"Parts": parts}
        )

    def _abort(self, name: str, upload_id: str) -> None:
        try:
            self.client.abort_multipart_upload(Bucket=self.bucket, Key=name, UploadId=upload_id)
        except ClientError as error:
            if not _missing(error):
                raise

    def open(self, key: str) -> BinaryIO:
        """The object as a buffered stream; a missing object raises FileNotFoundError."""
        raw = S3ObjectReader(self.client, self.bucket, self.object_key(key))
        return io.BufferedReader(raw, buffer_size=READ_BUFFER_BYTES)

    def delete(self, key: str) -> None:
        self.client.delete_object(Bucket=self.bucket, Key=self.object_key(key))

    def sweep_partial(self, older_than_seconds: float) -> int:
        """Aborts multipart uploads under the prefix with no part written for the given time.

        A PUT cut off by SIGKILL never aborts its multipart upload, whose parts
        the bucket would keep (and bill) for ever. A live PUT writes a part at
        least every PART_BYTES, so the age counted is that of its newest part.
        """
        cutoff = time.time() - older_than_seconds
        removed = 0
        paginator = self.client.get_paginator("list_multipart_uploads")
        prefix = self.object_key("")
        for page in paginator.paginate(Bucket=self.bucket, Prefix=prefix):
            for upload in page.get("Uploads", []):
                if self._last_write(upload) >= cutoff:
                    continue
                self._abort(upload["Key"], upload["UploadId"])
                removed += 1
        return removed

    def _last_write(self, upload: dict[str, Any]) -> float:
        latest: datetime = upload["Initiated"]
        try:
            answer = self.client.list_parts(
                Bucket=self.bucket, Key=upload["Key"], UploadId=upload["UploadId"]
            )
        except ClientError as error:
            if _missing(error):
                return time.time()  # finished or aborted meanwhile: not ours to touch
            raise
        for part in answer.get("Parts", []):
            latest = max(latest, part["LastModified"])
        return latest.timestamp()


class S3ObjectReader(io.RawIOBase):
    """A readable, seekable stream over one object: `get_object`'s body, re-opened at an
    offset (a ranged GET) when the reader seeks elsewhere, which ingestion does only at
    the file's start."""

    def __init__(self, client: Any, bucket: str, key: str) -> None:
        super().__init__()
        self._client = client
        self._bucket = bucket
        self._key = key
        self._position = 0
        self._body: Any = io.BytesIO()  # until the object answers
        self._body, self._size = self._get(0)

    def _get(self, start: int) -> tuple[Any, int]:
        options: dict[str, Any] = {"Bucket": self._bucket, "Key": self._key}
        if start:
            options["Range"] = f"bytes={start}-"
        try:
            answer = self._client.get_object(**options)
        except ClientError as error:
            if _missing(error):
                raise FileNotFoundError(self._key) from error
            raise
        return answer["Body"], start + int(answer["ContentLength"])

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def readinto(self, buffer: Any) -> int:
        data = self._body.read(len(buffer))
        count = len(data)
        buffer[:count] = data
        self._position += count
        return count

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if whence == io.SEEK_CUR:
            offset += self._position
        elif whence == io.SEEK_END:
            offset += self._size
        target = max(0, offset)
        if target != self._position:
            self._body.close()
            if target >= self._size:
                self._body = io.BytesIO()
            else:
                self._body, _ = self._get(target)
            self._position = target
        return self._position

    def close(self) -> None:
        if not self.closed:
            self._body.close()
        super().close()
