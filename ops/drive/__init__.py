"""The local runtime, driven from inside its process as its users and operators would drive it.

`make demo` (ops/demo/run.py) and the queueing scenarios (bench/scenarios) both drive it through this
package, so they start it, read it and change it the same way:

- `host.Harness` synthesizes the `local` app once per process and starts a fresh runtime for each
  `session()`, deployed from that template in a second or two;
- a `Session` talks to the pipeline only through its doors (HTTP: signed webhooks, SigV4 jobs),
  reads state the way an operator would (the emulator's DynamoDB, SQS and CloudWatch APIs, the
  runtime's metrics and mapping stats, the functions' JSON log lines: `log_lines.py`), and
  changes behaviour only as an operator could (`changes.py`: a function's environment through
  UpdateFunctionConfiguration, a mapping through UpdateEventSourceMapping, a queue's attributes
  through SetQueueAttributes, `lanectl` in a process of its own). Nothing inside the pipeline is
  called directly;
- `waiting.py` waits for a condition, either failing or handing back what it last saw.
"""

from __future__ import annotations

from ops.drive.host import Harness
from ops.drive.lanectl import lanectl
from ops.drive.log_lines import TERMINAL, LineLog, RecordLine
from ops.drive.session import Session
from ops.drive.waiting import poll, wait_for

__all__ = ["TERMINAL", "Harness", "LineLog", "RecordLine", "Session", "lanectl", "poll", "wait_for"]
