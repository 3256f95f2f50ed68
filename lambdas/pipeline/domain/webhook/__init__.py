"""The webhook door's rules: Meta's delivery from the raw bytes to a logged row and its lane.

`door.py` is the door's steps and answers; `delivery.py` parses a delivery and builds its log entry
and envelope; `body.py` stores the body (deflated, or in parts); `routing.py` picks lane, tenant and
kind; `client_certificate.py` the optional mutual TLS check. Its ports are in `ports.py`.
"""
