"""The optional edge: CloudFront in front of the webhook route, with an AWS WAF web ACL that limits
each source address and lets through nothing but the webhook's path.

AWS WAF protects a CloudFront distribution only with a web ACL made in us-east-1, so the edge
lives in this stack and this stack must then be deployed there: an environment pinned elsewhere is
refused by its config, and an environment-agnostic one carries a template rule that stops the
deploy anywhere else (a cross-region reference would need custom-resource Lambdas in both stacks).

What it does not do: the API's own execute-api address stays reachable (an HTTP API has no
resource policy to refuse callers that bypass CloudFront), so the route throttles still bound
what a caller going around the edge can take. The jobs routes are not served here: a SigV4
signature covers the Host header, which CloudFront changes, so producers keep calling the API.
"""

from __future__ import annotations

from aws_cdk import ArnFormat, Aws, CfnOutput, CfnRule, CfnRuleAssertion, Fn, Stack
from aws_cdk import aws_apigatewayv2 as apigw
from aws_cdk import aws_cloudfront as cloudfront
from aws_cdk import aws_cloudfront_origins as origins
from aws_cdk import aws_logs as logs
from aws_cdk import aws_wafv2 as waf
from constructs import Construct

from stacks.config.doors import WEBHOOK_PATH
from stacks.config.environments import EDGE_REGION, Environment
from stacks.constructs.function import retention
from stacks.constructs.removal import keeps_data


def _visibility(name: str) -> waf.CfnWebACL.VisibilityConfigProperty:
    return waf.CfnWebACL.VisibilityConfigProperty(
        cloud_watch_metrics_enabled=True, metric_name=name, sampled_requests_enabled=True
    )


class Edge(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, env: Environment, api: apigw.HttpApi) -> None:
        super().__init__(scope, construct_id)
        prefix = f"lanes-{env.name}-edge"
        if env.region is None:
            CfnRule(
                self,
                "InUsEast1",
                assertions=[
                    CfnRuleAssertion(
                        assert_=Fn.condition_equals(Aws.REGION, EDGE_REGION),
                        assert_description=f"The edge's AWS WAF web ACL for CloudFront can only be made in "
                        f"{EDGE_REGION}: deploy this stack there, or turn the edge off.",
                    )
                ],
            )
        self.web_acl = waf.CfnWebACL(
            self,
            "WebAcl",
            name=prefix,
            scope="CLOUDFRONT",
            default_action=waf.CfnWebACL.DefaultActionProperty(allow={}),
            visibility_config=_visibility(prefix),
            rules=[
                waf.CfnWebACL.RuleProperty(
                    name="webhook-path-only",
                    priority=0,
                    action=waf.CfnWebACL.RuleActionProperty(block={}),
                    statement=waf.CfnWebACL.StatementProperty(
                        not_statement=waf.CfnWebACL.NotStatementProperty(
                            statement=waf.CfnWebACL.StatementProperty(
                                byte_match_statement=waf.CfnWebACL.ByteMatchStatementProperty(
                                    field_to_match=waf.CfnWebACL.FieldToMatchProperty(uri_path={}),
                                    positional_constraint="EXACTLY",
                                    search_string=WEBHOOK_PATH,
                                    text_transformations=[
                                        waf.CfnWebACL.TextTransformationProperty(priority=0, type="NONE")
                                    ],
                                )
                            )
                        )
                    ),
                    visibility_config=_visibility(f"{prefix}-path"),
                ),
                waf.CfnWebACL.RuleProperty(
                    name="per-source-address",
                    priority=1,
                    action=waf.CfnWebACL.RuleActionProperty(block={}),
                    statement=waf.CfnWebACL.StatementProperty(
                        rate_based_statement=waf.CfnWebACL.RateBasedStatementProperty(
                            aggregate_key_type="IP",
                            limit=env.edge.requests_per_ip,
                            evaluation_window_sec=env.edge.window_seconds,
                        )
                    ),
                    visibility_config=_visibility(f"{prefix}-per-ip"),
                ),
            ],
        )
        self._logging(env, prefix)
        self.distribution = cloudfront.Distribution(
            self,
            "Distribution",
            comment=f"lanes-{env.name}: Meta webhook edge",
            web_acl_id=self.web_acl.attr_arn,
            price_class=cloudfront.PriceClass.PRICE_CLASS_100,
            http_version=cloudfront.HttpVersion.HTTP2_AND_3,
            default_behavior=cloudfront.BehaviorOptions(
                origin=origins.HttpOrigin(
                    f"{api.api_id}.execute-api.{Stack.of(self).region}.{Stack.of(self).url_suffix}",
                    protocol_policy=cloudfront.OriginProtocolPolicy.HTTPS_ONLY,
                    origin_ssl_protocols=[cloudfront.OriginSslPolicy.TLS_V1_2],
                ),
                viewer_protocol_policy=cloudfront.ViewerProtocolPolicy.HTTPS_ONLY,
                allowed_methods=cloudfront.AllowedMethods.ALLOW_ALL,
                # Every delivery is new: nothing is cached, and the API sees each request whole
                # (its own Host aside, which API Gateway routes on).
                cache_policy=cloudfront.CachePolicy.CACHING_DISABLED,
                origin_request_policy=cloudfront.OriginRequestPolicy.ALL_VIEWER_EXCEPT_HOST_HEADER,
            ),
        )
        CfnOutput(Stack.of(self), "EdgeUrl", value=f"https://{self.distribution.distribution_domain_name}")

    def _logging(self, env: Environment, prefix: str) -> None:
        """What the edge blocks, logged: the query string is redacted (the subscription handshake
        carries the verify token in it). What it lets through reaches the API's access log."""
        name = f"aws-waf-logs-{prefix}"  # AWS WAF logs only to groups named so
        group = logs.LogGroup(
            self,
            "BlockedRequests",
            log_group_name=name,
            retention=retention(env.log_retention_days),
            removal_policy=keeps_data(env),
        )
        arn = Stack.of(self).format_arn(
            service="logs", resource="log-group", resource_name=name, arn_format=ArnFormat.COLON_RESOURCE_NAME
        )
        logging = waf.CfnLoggingConfiguration(
            self,
            "Logging",
            resource_arn=self.web_acl.attr_arn,
            log_destination_configs=[arn],
            redacted_fields=[waf.CfnLoggingConfiguration.FieldToMatchProperty(query_string={})],
            logging_filter={
                "DefaultBehavior": "DROP",
                "Filters": [
                    {
                        "Behavior": "KEEP",
                        "Requirement": "MEETS_ANY",
                        "Conditions": [{"ActionCondition": {"Action": "BLOCK"}}],
                    }
                ],
            },
        )
        logging.node.add_dependency(group)
