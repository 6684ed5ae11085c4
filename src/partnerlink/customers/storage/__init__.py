"""Where uploaded customer files live: a local directory by default, or an S3-compatible
bucket (CONTRACT §10) so that workers on other machines can read them.

Ingestion only opens and deletes files by key, through the UploadStorage interface.
"""

from __future__ import annotations

from partnerlink.customers.storage.base import UploadStorage, UploadTooLarge
from partnerlink.customers.storage.local import LocalUploadStorage
from partnerlink.settings import Settings

__all__ = [
    "LocalUploadStorage",
    "UploadStorage",
    "UploadTooLarge",
    "upload_storage",
]


def upload_storage(settings: Settings) -> UploadStorage:
    """The configured storage: `file` (the upload directory) or `s3://bucket/prefix`."""
    if settings.upload_storage == "file":
        return LocalUploadStorage(settings.effective_upload_dir)
    # boto3 takes half a second to import: only processes that use S3 pay for it (every
    # command-line call would otherwise).
    from partnerlink.customers.storage.s3 import S3UploadStorage, parse_s3_url

    bucket, prefix = parse_s3_url(settings.upload_storage)
    return S3UploadStorage(bucket, prefix, endpoint_url=settings.s3_endpoint_url)
