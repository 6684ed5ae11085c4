"""Where uploaded customer files live: a local directory by default, or an S3-compatible
bucket (CONTRACT §10) so that workers on other machines can read them.

Ingestion only opens and deletes files by key, through the UploadStorage interface.
The configured storage comes from `configured.upload_storage`; this package itself
imports neither boto3 nor the settings, so that the upload reader process
(reader_process.py), which unpickles a local storage, stays small.
"""

from __future__ import annotations

from partnerlink.customers.storage.base import UploadStorage, UploadTooLarge
from partnerlink.customers.storage.local import LocalUploadStorage

__all__ = ["LocalUploadStorage", "UploadStorage", "UploadTooLarge"]
