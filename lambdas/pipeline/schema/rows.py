"""The obligation rows' attributes: what the webhook log's rows and the jobs table's rows share.

A row is written by the door or the jobs API, finished by the consumer's done-mark
(domain/consumer/marks.py), replayed, abandoned or expired by the sweeper (adapters/pending_rows.py)
and read back by lanectl; every one of them names these attributes from here. The keys and the
pending index are in the package's __init__; what only one table's rows carry is in
`webhook_log.py` and `jobs.py` beside this.
"""

from __future__ import annotations

STATUS = "status"
"""One of RowStatus (pipeline.schema)."""
LANE = "lane"
TENANT = "tenant"
KIND = "kind"
ATTEMPTS = "attempts"
"""Failed attempts, counted across re-sends."""
DEFERRALS = "deferrals"
UPDATED_AT = "updated_at"
FINISHED_AT = "finished_at"
LAST_ERROR = "last_error"
"""The last error's text: for operators only (an AWS error names roles, tables and accounts)."""
ERROR_CLASS = "error_class"
OUTCOME = "outcome"
RESULT = "result"
"""The counts a finished job's task reported (TaskResult.result)."""
REPLAYS = "replays"
"""How many times the sweeper replayed the row."""
REPLAYED_AT = "replayed_at"
ABANDON_REASON = "abandon_reason"
