"""The webhook log's own attributes, beside the obligation rows' (`rows.py`): the delivery's body as
stored (domain/webhook/body.py), and when and why it was logged."""

from __future__ import annotations

RECEIVED_AT = "received_at"
UNPARSEABLE_REASON = "unparseable_reason"
BODY = "body"
BODY_ENCODING = "body_encoding"
"""How BODY is stored: raw, gzip, or deflated against Meta's dictionary (domain/webhook/body.py)."""
BODY_PARTS = "body_parts"
"""On a row whose body was split: how many parts it has, the row's own included."""
PART_OF = "part_of"
"""On a body part item: the row it belongs to."""
