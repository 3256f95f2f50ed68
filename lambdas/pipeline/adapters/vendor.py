"""A simulated AI vendor: configurable latency and failure rate, no network.

Stands in for the model API behind the `llm` dependency so the budget, the time limit and the
retry policy can be exercised for real. Latency is slept (up to the caller's timeout: a call that
would outlast it fails as a timeout, as an HTTP client would), failures are transient, as a 429 or
a 503 from a real vendor would be. Lane options configure it: `vendor_latency_ms`,
`vendor_failure_rate`, and `vendor_rejects`: text the vendor answers with a 500 whenever a prompt
contains it, the shape of a poison message (one request that fails every time while the rest
succeed), for rehearsing dead letters and their redrive.
"""

from __future__ import annotations

import random
import re
import threading
import time
from collections.abc import Callable, Mapping

from pipeline.domain.errors import TransientError

CLASSIFY_PREFIX = "classify:"
_QUESTION = re.compile(r"\?|\b(how|when|where|what|price|open|available)\b", re.IGNORECASE)
_COMPLAINT = re.compile(r"\b(refund|broken|worst|terrible|never arrived|scam|angry)\b", re.IGNORECASE)
_SPAM = re.compile(r"https?://|\b(follow me|free money|crypto|dm me)\b", re.IGNORECASE)


class VendorUnavailable(TransientError):
    reason = "vendor_unavailable"


class VendorTimeout(TransientError):
    reason = "vendor_timeout"


class VendorRejected(TransientError):
    """A 500 for this request: retried, since nothing tells the caller it will never pass."""

    reason = "vendor_rejected"


def label_for(text: str) -> str:
    """The simulated model's triage labels, from plain keyword rules."""
    if _SPAM.search(text):
        return "spam"
    if _COMPLAINT.search(text):
        return "complaint"
    if _QUESTION.search(text):
        return "question"
    return "other"


class SimulatedVendor:
    def __init__(
        self,
        *,
        latency_ms: float,
        failure_rate: float,
        rng: random.Random,
        sleep: Callable[[float], None] = time.sleep,
        rejects: str = "",
    ) -> None:
        if latency_ms < 0 or not 0.0 <= failure_rate <= 1.0:
            raise ValueError("vendor latency must be >= 0 and its failure rate within 0..1")
        self._latency = latency_ms / 1000.0
        self._failure_rate = failure_rate
        self._rejects = rejects
        self._rng = rng
        self._rng_lock = threading.Lock()  # several tasks of one instance may call at once
        self._sleep = sleep

    @classmethod
    def from_options(cls, options: Mapping[str, str], rng: random.Random) -> SimulatedVendor:
        try:
            return cls(
                latency_ms=float(options.get("vendor_latency_ms", "0")),
                failure_rate=float(options.get("vendor_failure_rate", "0")),
                rng=rng,
                rejects=options.get("vendor_rejects", ""),
            )
        except ValueError as exc:
            raise ValueError(f"lane options configure the vendor badly: {exc}") from exc

    def complete(self, prompt: str, *, timeout: float) -> str:
        if self._latency > timeout:
            self._sleep(max(0.0, timeout))
            raise VendorTimeout(f"vendor did not answer within {timeout:.2f} s")
        self._sleep(self._latency)
        if self._rejects and self._rejects in prompt:
            raise VendorRejected("vendor answered 500 for this prompt")
        with self._rng_lock:
            failed = self._rng.random() < self._failure_rate
        if failed:
            raise VendorUnavailable("vendor answered 503")
        if prompt.startswith(CLASSIFY_PREFIX):
            return label_for(prompt[len(CLASSIFY_PREFIX) :])
        return f"Thanks for your message! ({len(prompt)} characters read)"
