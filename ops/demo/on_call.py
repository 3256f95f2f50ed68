"""The demo's last word on paging: on-call's inbox holds only the pages the story called for.

A first deploy with nothing wrong pages nobody (stacks/constructs/alarms.py, `Notice`): no OK
action runs when a new alarm is first evaluated, and an alarm on a signal's absence waits for the
signal. So what the inbox holds after the story is what the story did: the poison message's dead
letter, the door that could not start (Lambda's errors on its function and API Gateway's 5xx on
its route), and, if the model's 500s for it made most of the lane's calls fail for a while, the lane
pausing itself for them (model_failing) until the probe resumed it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ops.demo.incidents import DLQ_ALARM, DOOR_ERRORS_ALARM, DOOR_ROUTE_ALARM
from stacks.runtime_env import stack_name

if TYPE_CHECKING:
    from ops.demo.story import Demo

CALLED_FOR = {(DLQ_ALARM, "ALARM"), (DOOR_ERRORS_ALARM, "ALARM"), (DOOR_ROUTE_ALARM, "ALARM")}
"""Pages the story must have sent."""
MAY_PAGE = {("AiLanePausedModelFailing", "ALARM")}
"""Pages the story may send: whether the poison's failures reach the lane's failure share in its
window depends on how its retries fall."""


def only_the_story_paged(d: Demo) -> None:
    d.step(
        "On-call's inbox",
        """Every alarm was created when the runtime started, and none paged for it: the only pages are
        the ones the story caused.""",
    )
    stack = stack_name(d.s.runtime.env)
    pages = [(page.alarm.removeprefix(f"{stack}-"), page.state) for page in d.s.runtime.inbox.pages]

    def among(page: tuple[str, str], allowed: set[tuple[str, str]]) -> bool:
        return any(page[0].startswith(prefix) and page[1] == state for prefix, state in allowed)

    unexpected = [page for page in pages if not among(page, CALLED_FOR | MAY_PAGE)]
    missing = [wanted for wanted in CALLED_FOR if not any(among(page, {wanted}) for page in pages)]
    d.expect(
        "on-call",
        "the inbox holds only the pages the story called for",
        not unexpected and not missing,
        ", ".join(f"{state} {alarm}" for alarm, state in pages)
        + (f"; unexpected: {unexpected}" if unexpected else "")
        + (f"; missing: {missing}" if missing else ""),
    )


SCENES = (only_the_story_paged,)
