"""The jobs API's rules: a producer's request validated, admitted or shed, and made a row.

`api.py` is the API's steps and answers; `requests.py` job requests, ids and idempotency;
`admission.py` the predicted wait and the 503 with Retry-After; `bookkeeping.py` what finishing a
job commits beside its status (its tenant's queued count), which the consumer and the sweeper both
write. Its ports are in `ports.py`.
"""
