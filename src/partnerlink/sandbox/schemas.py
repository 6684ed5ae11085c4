"""Response shapes of the sandbox routes (CONTRACT.md §9)."""

from __future__ import annotations

from pydantic import BaseModel


class SandboxCode(BaseModel):
    code: int
    storeId: str
    expiresAt: str


class SandboxEvent(BaseModel):
    eventId: str
