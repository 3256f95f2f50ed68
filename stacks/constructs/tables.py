"""The pipeline's tables: the webhook log and jobs (the obligations), processing state
(idempotency markers, budgets, counters), the data the lane tasks write, and when each Meta source
account was last heard from (one partition sorted by account, so the sweeper reads every account
with a Query: lambdas/pipeline/adapters/accounts_seen.py; the state table has no sort key).

Every table expires items by DynamoDB's TTL on `expires_at`, which every writer sets (see
stacks/config/privacy.py for how long each kind is kept), and keeps point-in-time recovery for the
environment's `backup_days`: a deleted item stays restorable that long. The jobs and data tables
index what is about a person by that person's hash (`by_sender`, sparse, keys only), so an erasure
request finds it with a query (domain/senders.py); the data table keeps what the webhook lanes
store about a person in their own partition, found without the index. The webhook log carries the
hash on its rows but no index: it keeps a week of raw deliveries, small enough for an erasure to
scan, and an index entry would cost a write unit on every delivery (adapters/erasure.py).

The data table's class follows how long its items are kept (stacks/config/storage.py): Standard-IA
where that is long enough for storage to outweigh the dearer requests (prod), Standard elsewhere.

Logical IDs are pinned: renaming a construct must never replace a table.
"""

from __future__ import annotations

from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct

from pipeline import schema
from stacks.config.environments import Environment
from stacks.config.storage import data_table_class
from stacks.constructs.removal import keeps_data

WEBHOOK_LOG_ID = "WebhookLogTable"
JOBS_ID = "JobsTable"
STATE_ID = "StateTable"
DATA_ID = "DataTable"
ACCOUNTS_ID = "AccountsTable"
STATEFUL_LOGICAL_IDS = (WEBHOOK_LOG_ID, JOBS_ID, STATE_ID, DATA_ID, ACCOUNTS_ID)


class PipelineTables(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, env: Environment) -> None:
        super().__init__(scope, construct_id)
        self._env = env
        self.webhook_log = self._obligations(WEBHOOK_LOG_ID)
        self.jobs = self._by_sender(self._obligations(JOBS_ID))
        self.state = self._table(
            STATE_ID,
            partition_key=dynamodb.Attribute(name=schema.PK, type=dynamodb.AttributeType.STRING),
        )
        self.accounts = self._table(
            ACCOUNTS_ID,
            partition_key=dynamodb.Attribute(name=schema.PK, type=dynamodb.AttributeType.STRING),
            sort_key=dynamodb.Attribute(name=schema.SK, type=dynamodb.AttributeType.STRING),
        )
        self.data = self._by_sender(
            self._table(
                DATA_ID,
                partition_key=dynamodb.Attribute(name=schema.PK, type=dynamodb.AttributeType.STRING),
                sort_key=dynamodb.Attribute(name=schema.SK, type=dynamodb.AttributeType.STRING),
                table_class=dynamodb.TableClass(data_table_class(env.retention)),
            )
        )

    @property
    def all(self) -> tuple[dynamodb.Table, ...]:
        return (self.webhook_log, self.jobs, self.state, self.data, self.accounts)

    def _obligations(self, logical_id: str) -> dynamodb.Table:
        """A table whose rows are promises: pending rows sit in a sparse index sorted by age, so
        the sweeper finds the oldest unfinished ones with a query, never a scan."""
        table = self._table(
            logical_id,
            partition_key=dynamodb.Attribute(name=schema.ID, type=dynamodb.AttributeType.STRING),
        )
        table.add_global_secondary_index(
            index_name=schema.PENDING_INDEX,
            partition_key=dynamodb.Attribute(name=schema.PENDING_SHARD, type=dynamodb.AttributeType.STRING),
            sort_key=dynamodb.Attribute(name=schema.PENDING_SINCE, type=dynamodb.AttributeType.NUMBER),
            projection_type=dynamodb.ProjectionType.KEYS_ONLY,
        )
        return table

    @staticmethod
    def _by_sender(table: dynamodb.Table) -> dynamodb.Table:
        """Keys only: an erasure needs to know which items, and reads or deletes them by key. Only
        items that carry a hash are in it, and an update that leaves the hash alone writes nothing."""
        table.add_global_secondary_index(
            index_name=schema.SENDER_INDEX,
            partition_key=dynamodb.Attribute(name=schema.SENDER_HASH, type=dynamodb.AttributeType.STRING),
            projection_type=dynamodb.ProjectionType.KEYS_ONLY,
        )
        return table

    def _table(self, logical_id: str, **keys: object) -> dynamodb.Table:
        env = self._env
        table = dynamodb.Table(
            self,
            logical_id,
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True, recovery_period_in_days=env.retention.backup_days
            ),
            time_to_live_attribute=schema.TTL,
            encryption=dynamodb.TableEncryption.AWS_MANAGED,
            # Not here: a protected table refuses the delete of a failed first create's rollback.
            # Turned on at the end of every deploy instead (stacks/constructs/after_deploy.py).
            removal_policy=keeps_data(env),
            **keys,  # type: ignore[arg-type]
        )
        default_child = table.node.default_child
        assert isinstance(default_child, dynamodb.CfnTable)
        default_child.override_logical_id(logical_id)
        return table
