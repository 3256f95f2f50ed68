"""The jobs table's own attributes, beside the obligation rows' (`rows.py`): the request as the jobs
API took it (domain/jobs/requests.py)."""

from __future__ import annotations

CREATED_AT = "created_at"
DEADLINE = "deadline"
PAYLOAD = "payload"
REQUEST_HASH = "request_hash"
"""A digest of the request, so a repeated Idempotency-Key with another request is told apart."""
IDEMPOTENCY_KEY = "idempotency_key"
