"""AWS list prices, and the assumptions that turn a message into billable requests.

Prices are us-east-1 on-demand list prices as published in 2025, without free tiers, for the
services a message touches: SQS standard requests, Lambda on arm64 (GB-seconds and requests),
DynamoDB on-demand request units and storage (with point-in-time recovery), API Gateway HTTP API
requests, CloudWatch Logs ingestion, X-Ray traces; plus alarms, the dashboard, and CloudFront and
AWS WAF for the optional edge. ops/cost/pricing.py and ops/cost/environment_cost.py price with them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Prices:
    region: str = "us-east-1"
    as_of: str = "2025 list prices"
    sqs_per_million_requests: float = 0.40
    sqs_request_kib: int = 64
    """Each 64 KiB chunk of a message is billed as one request."""
    lambda_per_gb_second: float = 0.0000133334
    """arm64, first pricing tier."""
    lambda_per_million_requests: float = 0.20
    dynamodb_per_million_writes: float = 0.625
    dynamodb_per_million_reads: float = 0.125
    dynamodb_ia_per_million_writes: float = 0.78125
    """Standard-IA table class: a quarter more per request, for 60 % less storage."""
    dynamodb_ia_per_million_reads: float = 0.15625
    http_api_per_million_requests: float = 1.00
    logs_per_gb: float = 0.50
    """Ingestion."""
    logs_storage_per_gb_month: float = 0.03
    """Archived log data. Billed on what CloudWatch keeps after its own compression, which is not
    published: priced here on the bytes as written, an upper bound."""
    xray_per_million_traces: float = 5.00
    """Traces recorded; retrieval ($0.50 per million) is left out, it depends on who looks."""
    dynamodb_storage_per_gb_month: float = 0.25
    dynamodb_ia_storage_per_gb_month: float = 0.10
    pitr_per_gb_month: float = 0.20
    alarm_per_month: float = 0.10
    metric_per_month: float = 0.30
    """A custom CloudWatch metric (one name and set of dimensions), first 10,000."""
    dashboard_per_month: float = 3.00
    hours_per_month: float = 730.0
    cloudfront_per_million_https_requests: float = 1.00
    """$0.0100 per 10,000 HTTPS requests (United States, Europe)."""
    cloudfront_to_origin_per_gb: float = 0.020
    """Request bodies CloudFront carries to the API (United States, Europe)."""
    waf_web_acl_per_month: float = 5.00
    waf_rule_per_month: float = 1.00
    waf_per_million_requests: float = 0.60

    @property
    def seconds_per_month(self) -> float:
        return self.hours_per_month * 3600


LIST_PRICES = Prices()


@dataclass(frozen=True)
class ModelPrice:
    """Bedrock on-demand, per million tokens (us-east-1, 2025 list prices). A cross-region
    inference profile is billed at its model's price."""

    input_per_million: float
    output_per_million: float


MODEL_PRICES: dict[str, ModelPrice] = {
    "anthropic.claude-3-haiku-20240307-v1:0": ModelPrice(0.25, 1.25),
    "anthropic.claude-3-5-haiku-20241022-v1:0": ModelPrice(0.80, 4.00),
    "amazon.nova-micro-v1:0": ModelPrice(0.035, 0.14),
    "amazon.nova-lite-v1:0": ModelPrice(0.06, 0.24),
}
"""By model id (an inference profile's model: stacks/config/models.py LaneModel.foundation_model)."""


@dataclass(frozen=True)
class PromptCaching:
    """Bedrock's prompt caching for a model: the shortest prompt prefix a cache checkpoint takes,
    and what a token read from or written to the cache costs against an input token."""

    min_prefix_tokens: int
    read_share: float
    write_share: float


PROMPT_CACHING: dict[str, PromptCaching] = {
    # Claude: a cached token read at a tenth of an input token, written at 1.25 times.
    "anthropic.claude-3-5-haiku-20241022-v1:0": PromptCaching(2048, 0.10, 1.25),
    # Nova caches on its own: reads at a quarter of an input token, writes at no extra charge.
    "amazon.nova-micro-v1:0": PromptCaching(1000, 0.25, 1.0),
    "amazon.nova-lite-v1:0": PromptCaching(1000, 0.25, 1.0),
}
"""Models with prompt caching on Bedrock, by model id (2025: Claude 3 Haiku has none)."""


@dataclass(frozen=True)
class Usage:
    """How a message turns into requests, stated so the estimate can be argued with."""

    door_seconds: float = 0.03
    """Duration of the webhook door or jobs API invocation that accepts one message."""
    webhook_door_memory_mb: int = 1024
    jobs_door_memory_mb: int = 512
    invocation_overhead_seconds: float = 0.02
    row_overhead_kib: float = 0.15
    """Keys, status and timestamps on the row, beside the payload."""
    body_compression: float = 0.4
    """A webhook row keeps its body gzip-compressed: a 2 KB WhatsApp text is stored in about 0.9 KB
    (the consumer tests pin a row under 1 KB for a 2 KB text)."""
    stored_item_ratio: float = 0.35
    """What a webhook's task stores, per byte of the delivery: its text (about three quarters of a
    text delivery) deflated to under half (domain/stored_text.py)."""
    item_keys_kib: float = 0.2
    """The stored item's keys, sender, times and expiry beside its text (a 2 KB text's item is
    about 0.9 KB; tests/unit/tasks/test_messages.py pins it under 1 KB)."""
    log_kib_per_message: float = 0.6
    """The door's and the consumer's JSON log lines: one each per message, their counts taken
    from them by metric filters (scenario 10 measures about 620 bytes a webhook)."""
    platform_log_bytes_per_invocation: int = 330
    """START, END and REPORT, which Lambda writes for every invocation of every function."""
    retention_days: float = 30.0
    """How long a message's log row and effect are kept where no environment says (storage is
    priced per month kept); `lane_cost` takes an environment's own periods."""
    idle_pollers: int = 5
    """Lambda keeps five long-polling receivers per SQS mapping, each a request every 20 s when idle."""

    def door_memory(self, entry: str) -> int:
        return {"webhook": self.webhook_door_memory_mb, "job": self.jobs_door_memory_mb}.get(entry, 0)


ASSUMED = Usage()
