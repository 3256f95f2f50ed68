"""Which DynamoDB table class each table is kept in, decided from how long its items are kept.

The Standard-IA class charges a quarter more per request and 60 % less per stored gigabyte
(ops/cost/prices.py). The data table's items are written about once and then mostly kept: the messages,
statuses, comments and replies the lanes' tasks store, for the effects' retention. A 1 KB item
costs one write unit once and its storage every day it is kept, so Standard-IA is cheaper once an
item is kept longer than about a month: for a million 1 KB items kept d days, 60 % of $0.25 a
GB-month saves $0.15 x d / 30, and a quarter more per write costs $0.16 (even at 33 days). From
45 days, so that items updated a few times (a status moving from sent to read) still come out
ahead. The webhook log, jobs and state tables are written several times over a short life:
Standard.
"""

from __future__ import annotations

from stacks.config.privacy import Retention

STANDARD = "STANDARD"
INFREQUENT_ACCESS = "STANDARD_INFREQUENT_ACCESS"
INFREQUENT_ACCESS_FROM_DAYS = 45


def data_table_class(retention: Retention) -> str:
    return INFREQUENT_ACCESS if retention.effects_days >= INFREQUENT_ACCESS_FROM_DAYS else STANDARD
