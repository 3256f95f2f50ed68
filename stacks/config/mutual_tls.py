"""Optional mutual TLS on the webhook: Meta presents a client certificate on every delivery, and
API Gateway refuses a connection without one its truststore trusts.

Off by default. On, the stack adds a regional custom domain for the API with the truststore, and
the webhook door refuses any request that did not arrive through it with Meta's certificate: an
HTTP API's execute-api address cannot be closed for one route only (the jobs API and Meta's
data-deletion callback stay on it), so the door is what shuts that way round for webhooks.

Why the subject is checked as well as the chain: Meta's client certificate is issued by a public
certificate authority, which issues certificates to anyone; a truststore holding that CA admits
all of them. Only the certificate's common name says it is Meta's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

META_CLIENT_SUBJECT = "client.webhooks.fbclientcerts.com"
"""The common name of the client certificate Meta's webhooks present (Meta's Webhooks
documentation, "mTLS for Webhooks")."""

_LABEL = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
_DOMAIN = re.compile(rf"{_LABEL}(?:\.{_LABEL})+")
_CERTIFICATE_ARN = re.compile(r"arn:aws[a-z-]*:acm:([a-z0-9-]+):\d{12}:certificate/[0-9a-f-]{36}")
_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
_TRUSTSTORE = re.compile(r"s3://([^/]+)/(.+)")


@dataclass(frozen=True)
class MutualTlsConfig:
    """A regional custom domain for the API that requires a client certificate.

    Before the deploy (docs/RUNBOOK.md, "Mutual TLS on the webhook"): an ACM certificate for
    `domain_name`, issued, in the stack's region; the truststore (the PEM bundle of the CA chain
    Meta's documentation names) uploaded to S3. After it: a DNS record pointing `domain_name` at the
    stack's `WebhookDomainTarget` output, and Meta's callback URL changed to the domain's."""

    domain_name: str
    """The host Meta is given, like hooks.example.com. API Gateway takes no upper case."""
    certificate_arn: str
    """ACM certificate for the domain, in the stack's region (a regional endpoint's)."""
    truststore_uri: str
    """s3://bucket/key of the PEM truststore."""
    truststore_version: str | None = None
    """The S3 object version to use (versioned buckets): a new upload then changes nothing until
    this is changed and deployed, so a bad truststore cannot lock Meta out on its own."""
    client_subject: str = META_CLIENT_SUBJECT
    """The common name the door requires of the client certificate."""

    def __post_init__(self) -> None:
        if not _DOMAIN.fullmatch(self.domain_name) or len(self.domain_name) > 253:
            raise ValueError(
                f"mutual TLS domain_name {self.domain_name!r} is not a lower-case host name like hooks.example.com"
            )
        if not _CERTIFICATE_ARN.fullmatch(self.certificate_arn):
            raise ValueError(
                f"mutual TLS certificate_arn {self.certificate_arn!r} is not an ACM certificate ARN "
                "(arn:aws:acm:<region>:<account>:certificate/<id>)"
            )
        found = _TRUSTSTORE.fullmatch(self.truststore_uri)
        if found is None or not _BUCKET.fullmatch(found.group(1)):
            raise ValueError(f"mutual TLS truststore_uri {self.truststore_uri!r} is not s3://<bucket>/<key>")
        if self.truststore_version is not None and not self.truststore_version.strip():
            raise ValueError("mutual TLS truststore_version is empty: leave it None to use the latest object")
        if not self.client_subject or self.client_subject != self.client_subject.strip() or "," in self.client_subject:
            raise ValueError(f"mutual TLS client_subject {self.client_subject!r} is not a common name")

    @property
    def certificate_region(self) -> str:
        found = _CERTIFICATE_ARN.fullmatch(self.certificate_arn)
        assert found is not None  # checked above
        return found.group(1)

    @property
    def truststore_bucket(self) -> str:
        found = _TRUSTSTORE.fullmatch(self.truststore_uri)
        assert found is not None
        return found.group(1)

    @property
    def truststore_key(self) -> str:
        found = _TRUSTSTORE.fullmatch(self.truststore_uri)
        assert found is not None
        return found.group(2)
