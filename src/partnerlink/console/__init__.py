"""The merchant console (`/merchant`): server-rendered pages over the domain services."""
