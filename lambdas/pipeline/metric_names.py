"""Custom metric names and dimensions: emitted by the handlers, alarmed on and graphed by the
stack. Dimensions are lanes, outcomes and error classes only; tenants go in log fields (a
dimension per tenant would cost a metric per tenant)."""

LANE = "Lane"
OUTCOME = "Outcome"
ERROR_CLASS = "ErrorClass"
REASON = "Reason"
PROBE_FAILED = "ProbeFailed"  # by Lane: a probe run found the dependency that paused the lane still failing
LANE_RESUMED = "LaneResumed"  # by Lane: the probe brought a lane that paused itself back to its full concurrency
SOURCE = "Source"

# Ingress (webhook door)
WEBHOOK_DUPLICATE = "WebhookDuplicate"
WEBHOOK_UNPARSEABLE = "WebhookUnparseable"
WEBHOOK_REJECTED = "WebhookRejected"  # by Reason: signature_missing, signature_mismatch, too_large, ...
REJECTED_BY = "RejectedBy"
"""A second dimension set on WebhookRejected: every refused signature (missing, malformed or
mismatched) is also counted as RejectedBy=signature, the one series its alarm watches."""
SIGNATURE = "signature"
WEBHOOK_ENQUEUED = "WebhookEnqueued"  # by Lane
WEBHOOK_ENQUEUED_TOTAL = "WebhookEnqueuedTotal"  # every lane together: the quiet-webhooks alarm
ENQUEUE_FAILED = "EnqueueFailed"  # by Lane: the row is kept for the sweeper

# Jobs API
JOB_ACCEPTED = "JobAccepted"  # by Lane
JOB_DUPLICATE = "JobDuplicate"  # by Lane
JOB_SHED = "JobShed"  # by Lane: 503 with Retry-After
JOB_TENANT_LIMITED = "JobTenantLimited"  # by Lane: 429
JOB_FORBIDDEN = "JobForbidden"  # 403: a caller acting for a tenant it is not granted

# Erasure (Meta's data-deletion callback and its status page)
META_IGNORED = "MetaIgnored"  # by Lane and Ignored (a name: field.mention, status.played, ...): what was not acted on
IGNORED = "Ignored"
ERASURE_REQUESTED = "ErasureRequested"
ERASURE_REPEATED = "ErasureRepeated"  # a request for a person whose erasure is pending: its code again
ERASURE_REFUSED = "ErasureRefused"  # by Reason: signed_request_missing, _malformed, _mismatch, ...; busy

# Consumers: one metric per record outcome, by Lane and Outcome
RECORDS = "Records"


class Outcome:
    DONE = "done"
    DUPLICATE = "duplicate"
    SUPERSEDED = "superseded"
    DEFERRED = "deferred"
    WOULD_DEFER = "would_defer"  # a budget in observe mode
    EXPIRED = "expired"
    RETRIED = "retried"
    DEAD_LETTERED = "dead_lettered"
    NOT_STARTED = "not_started"  # too little time left in the invocation
    CUT_SHORT = "cut_short"  # started with what the invocation had left, and needed more


RETRIED_BY_CLASS = "Retried"  # by Lane and ErrorClass
ABANDONED = "Abandoned"  # by Source (webhook/job) from the sweeper; by Lane from consumers
UNPROCESSABLE_UNITS = "UnprocessableUnits"  # by Lane: units of a delivery skipped because they cannot be stored
EXPIRED_UNPROCESSED = "ExpiredUnprocessed"  # by Source, from the sweeper: retention ran out while pending
MODEL_INPUT_TOKENS = "ModelInputTokens"  # by Lane: tokens the lane's model calls read (prompt and system prompt)
MODEL_OUTPUT_TOKENS = "ModelOutputTokens"  # by Lane: tokens its model calls wrote
REPLIES_SENT = "RepliesSent"  # by Lane: replies Meta accepted (tasks/replies.py), from the outcome lines
REPLIES_UNANSWERED = "RepliesUnanswered"  # by Lane: turns whose reply was never sent, or whose send was never confirmed
REPLIES_FAILED = "RepliesFailed"  # by Lane and Code (Meta's, of a `failed` status); by Lane alone for its alarm
CODE = "Code"
REPLY_CALLBACKS_REFUSED = "ReplyCallbacksRefused"  # by Lane: statuses whose reply reference did not verify
LANE_PAUSED = "LanePaused"  # by Lane and Reason: a record failed in a way no retry fixes, so the lane paused itself
REASON = "Reason"
OUT_OF_TIME = "OutOfTime"  # by Lane: consumer invocations whose batch had not settled when their time ran out

# Sweeper
OLDEST_UNPROCESSED_AGE = "OldestUnprocessedAgeSeconds"  # by Source: webhook, job
REPLAYED = "Replayed"  # by Source
QUIET_ACCOUNTS = "QuietAccounts"  # source accounts that normally send and are quiet too long (one series)

# The doors' own failures: each is a 5xx its caller sees (Meta retries; producers should too)
WEBHOOK_FAILED = "WebhookFailed"  # by Reason (WebhookFailure): Meta got a 5xx and will retry
JOB_FAILED = "JobFailed"  # by Reason (JobFailure): the producer got a 5xx
ERASURE_FAILED = "ErasureFailed"  # by Reason (ErasureFailure): Meta's callback got a 5xx


class WebhookFailure:
    MISCONFIGURED = "misconfigured"
    SECRETS_UNAVAILABLE = "secrets_unavailable"
    LOG_WRITE_FAILED = "log_write_failed"
    ENQUEUE_UNNOTED = "enqueue_unnoted"
    """The send failed and the row could not be put where the sweeper looks."""
    INTERNAL = "internal"
    ALL = (MISCONFIGURED, SECRETS_UNAVAILABLE, LOG_WRITE_FAILED, ENQUEUE_UNNOTED, INTERNAL)


class JobFailure:
    TABLE_UNAVAILABLE = "table_unavailable"
    SECRETS_UNAVAILABLE = "secrets_unavailable"
    """The sender key could not be read, so the job's row could not be indexed for erasure."""
    INTERNAL = "internal"
    ALL = (TABLE_UNAVAILABLE, SECRETS_UNAVAILABLE, INTERNAL)


class ErasureFailure:
    SECRETS_UNAVAILABLE = "secrets_unavailable"
    """The Meta secret or the sender key could not be read (or the Meta secret is unusable)."""
    TABLE_UNAVAILABLE = "table_unavailable"
    INTERNAL = "internal"
    ALL = (SECRETS_UNAVAILABLE, TABLE_UNAVAILABLE, INTERNAL)
