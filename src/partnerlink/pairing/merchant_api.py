"""Routes of this domain (filled in by its capability)."""

from fastapi import APIRouter

router = APIRouter()
