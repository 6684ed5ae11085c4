"""A real local S3-compatible server for the tests: moto's standalone server in its own process.

Our code talks to it over HTTP with boto3 exactly as it would to AWS or MinIO;
nothing of ours is patched.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import httpx
import pytest

from tests.conftest import free_port

CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "test-key-id",
    "AWS_SECRET_ACCESS_KEY": "test-secret-key",
    "AWS_DEFAULT_REGION": "us-east-1",
}


@dataclass
class S3Server:
    endpoint_url: str

    def client(self) -> Any:
        return boto3.session.Session(
            aws_access_key_id=CREDENTIALS["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
            region_name=CREDENTIALS["AWS_DEFAULT_REGION"],
        ).client("s3", endpoint_url=self.endpoint_url)

    def new_bucket(self) -> str:
        name = f"plk-{uuid.uuid4().hex[:12]}"
        self.client().create_bucket(Bucket=name)
        return name

    def objects(self, bucket: str) -> list[str]:
        listing = self.client().list_objects_v2(Bucket=bucket)
        return [item["Key"] for item in listing.get("Contents", [])]

    def multipart_uploads(self, bucket: str) -> list[str]:
        listing = self.client().list_multipart_uploads(Bucket=bucket)
        return [item["Key"] for item in listing.get("Uploads", [])]


def start_s3_server(host: str = "127.0.0.1", port: int | None = None) -> subprocess.Popen[bytes]:
    port = port or free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", host, "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError("the S3 server (moto) exited at start")
        try:
            httpx.get(f"http://{host}:{port}/", timeout=1)
            return process
        except httpx.HTTPError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError("the S3 server (moto) did not start in 30 s")


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """The server, with the standard AWS_* variables set for our code (and live servers)."""
    port = free_port()
    process = start_s3_server(port=port)
    saved = {name: os.environ.get(name) for name in CREDENTIALS}
    os.environ.update(CREDENTIALS)
    try:
        yield S3Server(f"http://127.0.0.1:{port}")
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        process.terminate()
        process.wait(timeout=10)
