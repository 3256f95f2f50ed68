"""What a command runs with: the environment, where its AWS is, the console, and a clock (tests
drive the clock and the sleeps; nothing in the commands reads the process directly)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ops.aws import Aws, Target
from ops.output import Console
from ops.resolve import Deployment, resolve
from stacks.config.environments import Environment


@dataclass
class Context:
    env: Environment
    target: Target
    aws: Aws
    console: Console
    clock: Callable[[], float] = time.time
    sleep: Callable[[float], None] = time.sleep
    _deployment: Deployment | None = field(default=None, repr=False)

    def deployment(self) -> Deployment:
        if self._deployment is None:
            self._deployment = resolve(self.aws.client("cloudformation"), self.env, self.target.where)
        return self._deployment
