"""The sweeper's rules: find the obligations the queue lost and replay them, no sooner than needed.

`run.py` is one sweep; `inputs.py` what it reads (rows, lanes); `verdict.py` lost, late or abandoned;
`bookkeeping.py` what abandoning a job commits beside its status.
Its ports are in `ports.py`.
"""
