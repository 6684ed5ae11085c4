"""The upload storage the settings name."""

from __future__ import annotations

from partnerlink.customers.storage.base import UploadStorage
from partnerlink.customers.storage.local import LocalUploadStorage
from partnerlink.settings import Settings

__all__ = ["upload_storage"]


def upload_storage(settings: Settings) -> UploadStorage:
    """The configured storage: `file` (the upload directory) or `s3://bucket/prefix`."""
    if settings.upload_storage == "file":
        return LocalUploadStorage(settings.effective_upload_dir)
    # boto3 takes half a second to import: only processes that use S3 pay for it (every
    # command-line call would otherwise).
    from partnerlink.customers.storage.s3 import S3UploadStorage, parse_s3_url

    bucket, prefix = parse_s3_url(settings.upload_storage)
    return S3UploadStorage(bucket, prefix, endpoint_url=settings.s3_endpoint_url)
