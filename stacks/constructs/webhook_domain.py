"""The optional custom domain with mutual TLS in front of the API (stacks/config/mutual_tls.py):
API Gateway checks Meta's client certificate against the truststore before any function runs,
and passes the certificate's subject to the door, which requires Meta's.

The whole API is mapped (a mapping cannot take one route), but only Meta holds the certificate, so
in practice only the webhook is called here; producers and Meta's data-deletion callback keep the
execute-api address."""

from __future__ import annotations

from aws_cdk import Aws, CfnOutput, CfnRule, CfnRuleAssertion, Fn, Stack
from aws_cdk import aws_apigatewayv2 as apigw
from aws_cdk import aws_certificatemanager as acm
from aws_cdk import aws_s3 as s3
from constructs import Construct

from stacks.config.doors import WEBHOOK_PATH
from stacks.config.mutual_tls import MutualTlsConfig


class WebhookDomain(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: MutualTlsConfig,
        api: apigw.HttpApi,
        stage: apigw.IStage,
        region_pinned: bool,
    ) -> None:
        super().__init__(scope, construct_id)
        if not region_pinned:
            # An environment-agnostic stack learns its region only at deploy: stop there rather
            # than let API Gateway refuse a certificate from another region halfway through.
            CfnRule(
                self,
                "CertificateInStackRegion",
                assertions=[
                    CfnRuleAssertion(
                        assert_=Fn.condition_equals(Aws.REGION, config.certificate_region),
                        assert_description=f"The mutual TLS certificate is in {config.certificate_region}: a "
                        "regional custom domain needs it in the stack's region.",
                    )
                ],
            )
        self.domain = apigw.DomainName(
            self,
            "Domain",
            domain_name=config.domain_name,
            certificate=acm.Certificate.from_certificate_arn(self, "Certificate", config.certificate_arn),
            security_policy=apigw.SecurityPolicy.TLS_1_2,
            mtls=apigw.MTLSConfig(
                bucket=s3.Bucket.from_bucket_name(self, "Truststore", config.truststore_bucket),
                key=config.truststore_key,
                version=config.truststore_version,
            ),
        )
        apigw.ApiMapping(self, "Mapping", api=api, domain_name=self.domain, stage=stage)
        stack = Stack.of(self)
        CfnOutput(
            stack,
            "WebhookDomainTarget",
            value=self.domain.regional_domain_name,
            description=f"Point {config.domain_name} here (a CNAME, or an alias with WebhookDomainZone)",
        )
        CfnOutput(stack, "WebhookDomainZone", value=self.domain.regional_hosted_zone_id)
        CfnOutput(
            stack,
            "WebhookMutualTlsUrl",
            value=f"https://{config.domain_name}{WEBHOOK_PATH}",
            description="The callback URL to give Meta once DNS points at WebhookDomainTarget",
        )
