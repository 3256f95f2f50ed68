"""What an operator can change on a running pipeline, and nothing more: a function's environment or
timeout (UpdateFunctionConfiguration), a mapping (UpdateEventSourceMapping), a queue's attributes
(SetQueueAttributes), and the emulator's fair-queue thresholds (which stand for SQS's own)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from ops.drive.lane_changes import changed_lane
from ops.drive.reach import Reach
from ops.drive.waiting import wait_for
from pipeline.settings import codec
from pipeline.settings.budget_mode import Mode as BudgetMode
from pipeline.settings.dependency_budget import DependencyBudget
from stacks.runtime_env import lane_id

CONFIG_ADOPTION_SECONDS = 10.0
MAPPING_REFRESH_SECONDS = 1.3
"""The runtime's pollers re-read their mapping every second."""


class Changes(Reach):
    def update_environment(self, role: str, change: Callable[[dict[str, str]], None]) -> None:
        self.update_environments({role: change})

    def update_environments(self, changes: Mapping[str, Callable[[dict[str, str]], None]]) -> None:
        """UpdateFunctionConfiguration with a changed environment for each function, then make sure
        the runtime has adopted them all. The runtime re-reads every configuration every two seconds
        and retires the warm instances, as a deploy would; this hands it the new
        configuration at once (the same FunctionHost.reconfigure call) to save those seconds."""
        from local_aws.functions import FunctionConfig

        lambda_ = self.aws("lambda")
        expected: dict[str, dict[str, str]] = {}
        hosts = {}
        for role, change in changes.items():
            name = self.function_name(role)
            variables = dict(lambda_.get_function_configuration(FunctionName=name)["Environment"]["Variables"])
            change(variables)
            updated = lambda_.update_function_configuration(FunctionName=name, Environment={"Variables": variables})
            expected[role] = variables
            hosts[role] = self.host(role)
            hosts[role].reconfigure(FunctionConfig.from_moto(updated))
        wait_for(
            lambda: all(dict(hosts[role].config.environment) == variables for role, variables in expected.items()),
            CONFIG_ADOPTION_SECONDS,
            what=f"configuration of {', '.join(expected)}",
        )

    def configure_model(self, **changes: Any) -> None:
        """Change how the model behaves (local_aws/converse_fake.py: latency_ms, failure_rate,
        failure_code, rejects, requests_per_second, refuse): Bedrock's side, not the pipeline's."""
        self.runtime.model.configure(**changes)

    def configure_graph(self, **changes: Any) -> None:
        """Change how Meta's Graph API behaves (local_aws/graph_fake.py: latency_ms, error_code,
        error_rate, messages_per_second, lost_answer_rate, statuses, revoked): Meta's side."""
        self.runtime.graph.configure(**changes)

    def set_timeout(self, role: str, seconds: int) -> None:
        """UpdateFunctionConfiguration(Timeout=...), adopted at once like an environment change."""
        from local_aws.functions import FunctionConfig

        updated = self.aws("lambda").update_function_configuration(
            FunctionName=self.function_name(role), Timeout=seconds
        )
        self.host(role).reconfigure(FunctionConfig.from_moto(updated))

    def configure_lane(self, lane: str, *, options: Mapping[str, str | None] | None = None, **settings: Any) -> None:
        """Change fields of a consumer's lane policy (and task options; None removes an option)."""
        self.configure_lanes([lane], options=options, **settings)

    def configure_lanes(
        self, lanes: list[str], *, options: Mapping[str, str | None] | None = None, **settings: Any
    ) -> None:
        def change(variables: dict[str, str]) -> None:
            variables["LANE"] = changed_lane(variables["LANE"], options=options, **settings)

        self.update_environments(dict.fromkeys(lanes, change))

    def configure_dependency(self, lanes: list[str], *, mode: str) -> None:
        """The shared dependency budget's mode (enforce/observe), on every consumer that holds it."""

        def change(variables: dict[str, str]) -> None:
            # Read and written as the consumer reads them, so a mode it does not know fails here.
            budgets = codec.loads(dict[str, DependencyBudget], variables["DEPENDENCIES"])
            variables["DEPENDENCIES"] = codec.dumps(
                {name: replace(budget, mode=BudgetMode(mode)) for name, budget in budgets.items()}
            )

        self.update_environments(dict.fromkeys(lanes, change))

    def set_mapping(
        self,
        lane: str,
        *,
        max_concurrency: int | None = None,
        enabled: bool | None = None,
        window_seconds: int | None = None,
    ) -> None:
        kwargs: dict[str, Any] = {"UUID": self.outputs[f"{lane_id(lane)}MappingId"]}
        if max_concurrency is not None:
            kwargs["ScalingConfig"] = {"MaximumConcurrency": max_concurrency}
        if window_seconds is not None:
            kwargs["MaximumBatchingWindowInSeconds"] = window_seconds
        if enabled is not None:
            kwargs["Enabled"] = enabled
        self.aws("lambda").update_event_source_mapping(**kwargs)
        time.sleep(MAPPING_REFRESH_SECONDS)

    def set_queue_attributes(self, lane: str, attributes: Mapping[str, str]) -> dict[str, str]:
        """SetQueueAttributes on a lane's queue; returns the previous values of those attributes."""
        sqs = self.aws("sqs")
        url = self.queue_url(lane)
        before = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=list(attributes))["Attributes"]
        sqs.set_queue_attributes(QueueUrl=url, Attributes=dict(attributes))
        return dict(before)

    def set_fairness(self, lane: str, fairness: Any) -> Any:
        """The fair-queue thresholds of a lane's queue (local_aws/fairness.py), as the runtime
        holds it; returns the previous ones. `fairness.OFF` makes it a queue without fairness."""
        from local_aws.moto_sqs import index_of

        index = index_of(self.runtime_queue(lane))
        previous = index.groups.fairness
        index.groups.fairness = fairness
        return previous
