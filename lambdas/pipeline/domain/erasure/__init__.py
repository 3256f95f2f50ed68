"""Erasure: a person's data found and removed, on Meta's callback or an operator's request.

`callback.py` is Meta's data-deletion callback and status page; `signed_request.py` verifies its
signed_request; `requests.py` the erasure job and its tombstones. Its ports are in `ports.py`.
"""
