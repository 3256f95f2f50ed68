"""`make demo`: the real pipeline on this machine, driven as Meta, a producer and on-call would.

It starts the local runtime (the `local` template deployed into an in-process emulator, through
ops/drive like every scenario), then plays a narrated scenario through HTTP only: signed WhatsApp
messages and out-of-order statuses, a forged and a redelivered webhook, a comment flood from one
page beside a quiet one (ops/demo/webhooks.py), AI jobs until admission control answers 503 with
Retry-After, and a poison message that ends in the dead-letter queue, fires its alarm, and is
redriven with `lanectl` once the fault is cleared, a webhook door that cannot start paging through
Lambda's own error count (ops/demo/incidents.py), and a replay after a fix:
one of the customer's deliveries traced, their window listed and replayed, each task re-run once
(ops/demo/replays.py); a customer's three quick texts answered by one reply with no job posted
and a person's echo silencing the model (ops/demo/auto_reply.py); a customer with a WhatsApp
username and no phone number stored, answered by business-scoped user id, traced and erased
(ops/demo/usernames.py). Last, it checks that on-call's inbox holds only the pages the story
called for (ops/demo/on_call.py). It ends with a table of what happened and exits 0 only if every
expectation held.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

from ops.demo import auto_reply as demo_auto_reply
from ops.demo import incidents as demo_incidents
from ops.demo import on_call as demo_on_call
from ops.demo import replays as demo_replays
from ops.demo import usernames as demo_usernames
from ops.demo import webhooks as demo_webhooks
from ops.demo.story import Demo


def add_arguments(parser: argparse.ArgumentParser) -> None:
    del parser  # the demo takes no options: it is the same story every time


def main(args: argparse.Namespace | None = None) -> int:
    del args
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
    return Demo(out=sys.stdout).run(
        (
            *demo_webhooks.SCENES,
            *demo_incidents.SCENES,
            *demo_replays.SCENES,
            *demo_webhooks.LAST,
            *demo_usernames.SCENES,
            *demo_auto_reply.SCENES,
            *demo_on_call.SCENES,
        )
    )


if __name__ == "__main__":
    raise SystemExit(main())
