"""What the local runtime changes in its own process while it runs, and gives back when it closes:
fake AWS credentials in the environment, the interpreter's thread slices, the fair queues'
clocks, the garbage collector's frozen objects and a quieter moto server log."""

from __future__ import annotations

import gc
import logging
import os
import sys

from local_aws import fairness, moto_sqs
from local_aws.deploy import REGION

FAKE_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "local",
    "AWS_SECRET_ACCESS_KEY": "local",
    "AWS_SESSION_TOKEN": "local",
    "AWS_DEFAULT_REGION": REGION,
    "AWS_REGION": REGION,
}
SWITCH_INTERVAL_SECONDS = 0.001


class ProcessState:
    def __init__(self) -> None:
        self._saved_environ: dict[str, str | None] = {}
        self._saved_switch_interval = sys.getswitchinterval()
        self._saved_fairness = fairness.AWS

    def enter_environment(self) -> None:
        # moto's server answers an action it has not implemented (StartMessageMoveTask, say) with a
        # 500 and logs the traceback; the caller sees the 500 and falls back, so keep the log quiet.
        logging.getLogger("werkzeug").setLevel(logging.CRITICAL)
        self.set_environ(FAKE_CREDENTIALS)

    def set_environ(self, values: dict[str, str]) -> None:
        for name, value in values.items():
            self._saved_environ.setdefault(name, os.environ.get(name))
            os.environ[name] = value

    def tune_interpreter(self) -> None:
        # The lanes' queues are fair queues on clocks scaled to this environment's seconds.
        self._saved_fairness = moto_sqs.use_fairness(fairness.LOCAL)
        # Every function shares this interpreter's lock; a door request waiting behind consumer
        # batches gets it back sooner with shorter slices (measured: see bench/REPORT.md, soak).
        self._saved_switch_interval = sys.getswitchinterval()
        sys.setswitchinterval(SWITCH_INTERVAL_SECONDS)

    def restore_interpreter(self) -> None:
        gc.unfreeze()
        sys.setswitchinterval(self._saved_switch_interval)
        moto_sqs.use_fairness(self._saved_fairness)

    def restore_environ(self) -> None:
        for name, value in self._saved_environ.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
