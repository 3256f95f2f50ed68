"""The lane probe's DynamoDB units a run, in each state a lane can be in, and the consumer's pause
mark, measured on moto with the scenarios' meter (bench/scenarios/metering.py).

    python -m bench.lane_probe_units

The probe reads every pausable lane's mark with one eventually consistent BatchGetItem. The meter
prices the items a read found (0.5 read units each, under 4 KB); DynamoDB also charges a key it
did not find at the minimum, so the charged figure counts every key asked for.
"""

from __future__ import annotations

import json

from bench.consumer_world import fake_aws

LANES = ("ai", "engagement")


def main() -> None:
    with fake_aws():
        import boto3

        from bench.scenarios.metering import Meter, metering_new_clients
        from local_aws.graph_fake import GraphFake
        from pipeline.adapters.pause_marks import PauseMarks
        from pipeline.handlers.lane_probe import create_handler
        from stacks import runtime_env
        from stacks.config.environments import ENVIRONMENTS
        from tests.support.aws import META_ACCESS_TOKEN, REGION, deploy
        from tests.support.mappings import mapped_function

        env = ENVIRONMENTS["local"]
        made = deploy(env)
        mappings = {lane: mapped_function(made.queue_arns[lane], f"lanes-local-{lane}-consumer") for lane in LANES}
        graph = GraphFake(token=META_ACCESS_TOKEN)
        graph.start()
        environ = {
            **runtime_env.lane_probe(env, made.resources, json.dumps, mappings),
            "GRAPH_API_URL": graph.url,
            "AWS_REGION": REGION,
        }
        lambda_ = boto3.client("lambda", region_name=REGION)
        meter = Meter(lambda: boto3.session.Session(region_name=REGION).client("dynamodb"))
        group = {"name": ""}
        with metering_new_clients(meter, lambda service, params: group["name"] or None):
            handler = create_handler(environ)
            marks = PauseMarks(boto3.client("dynamodb", region_name=REGION), made.resources.state_table, lambda: 1.0)

            def run(name: str) -> dict:
                group["name"] = name
                report = handler({}, None)
                group["name"] = ""
                return report

            run("1. no lane paused")
            lambda_.update_event_source_mapping(UUID=mappings["ai"], Enabled=False)
            group["name"] = "0. the consumer's pause mark"
            marks.paused_by_lane("ai", "meta_token_invalid")
            group["name"] = ""
            graph.configure(revoked=True)
            run("2. ai paused, its token still refused")
            graph.configure(revoked=False)
            run("3. ai's token answers: first ramp step")
            run("4. ai's last ramp step: its mark deleted")
        graph.stop()
    print(f"lane probe, {len(LANES)} pausable lanes (local: MaximumConcurrency 3, so two ramp steps)")
    print(f"{'run':<44} {'write units':>11} {'read units (found)':>19} {'read units charged':>19}  requests")
    for name in sorted(meter.usage):
        usage = meter.usage[name]
        batch_reads = usage.requests.get(("dynamodb", "BatchGetItem"), 0)
        # Every key asked for is charged, found or not: 0.5 read units each (the marks are under 4 KB).
        charged = 0.5 * batch_reads * len(LANES)
        requests = ", ".join(f"{op} {n}" for (_, op), n in sorted(usage.requests.items()))
        print(f"{name:<44} {usage.wcu:>11g} {usage.rcu:>19g} {charged:>19g}  {requests}")


if __name__ == "__main__":
    main()
