"""The demo's frame: a narrator that runs scenes against the local runtime, records what each
expected and observed, and ends with the table of what happened. The scenes are in
ops/demo/webhooks.py, incidents.py and replays.py; ops/demo/run.py puts them in order."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TextIO

from ops.drive import Harness, Session


@dataclass
class Expectation:
    step: str
    claim: str
    held: bool
    observed: str


@dataclass
class Demo:
    out: TextIO
    pipeline: Session | None = None
    results: list[Expectation] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)
    story: dict[str, Any] = field(default_factory=dict)
    """What one scene leaves for a later one (the customer, the delivery Meta will retry)."""

    @property
    def s(self) -> Session:
        assert self.pipeline is not None, "the runtime is not running"
        return self.pipeline

    # ------------------------------------------------------------------ narration

    def say(self, text: str = "") -> None:
        self.out.write(text + "\n")
        self.out.flush()

    def _runtime_event(self, line: str) -> None:
        # Alarms settling from "no data yet" to OK at start-up are not news; firing and clearing are.
        if "ALARM" in line or "error" in line:
            self.say(f"   [runtime] {line}")

    def step(self, title: str, story: str) -> None:
        self.say()
        self.say(f"== {title}  (t+{time.monotonic() - self.started:.0f}s)")
        for line in story.strip().splitlines():
            self.say(f"   {line.strip()}")

    def expect(self, step: str, claim: str, held: bool, observed: str) -> bool:
        self.results.append(Expectation(step, claim, bool(held), observed))
        self.say(f"   {'✓' if held else '✗'} {claim}: {observed}")
        return bool(held)

    def lanectl(self, *args: str) -> subprocess.CompletedProcess[str]:
        """On-call's command, shown as typed, with the last lines it printed."""
        self.say(f"   $ lanectl --env local {' '.join(args)}")
        result = self.s.lanectl(*args)
        for line in (result.stdout + result.stderr).strip().splitlines()[-12:]:
            self.say(f"     | {line}")
        return result

    # ------------------------------------------------------------------ the story

    def run(self, scenes: tuple[Callable[[Demo], None], ...]) -> int:
        from ops.console.console import summary

        self.say("Starting the local runtime: synthesizing the `local` environment and deploying it into moto...")
        harness = Harness()
        ending = ""
        try:
            with harness.session(cli=True, on_event=self._runtime_event) as pipeline:
                self.pipeline = pipeline
                try:
                    self.say(f"   API {pipeline.runtime.api_url}   emulated AWS {pipeline.runtime.aws_endpoint}")
                    for scene in scenes:
                        scene(self)
                    return self.report()
                finally:
                    ending = summary(pipeline.runtime)
        finally:
            harness.close()
            self.say(ending)

    def report(self) -> int:
        held = [r for r in self.results if r.held]
        self.say()
        self.say(f"What happened (t+{time.monotonic() - self.started:.0f}s)")
        width = max(len(r.claim) for r in self.results)
        for r in self.results:
            self.say(f"  {'✓' if r.held else '✗'} {r.step:<11} {r.claim:<{width}}  {r.observed}")
        self.say(f"{len(held)} of {len(self.results)} expectations held")
        return 0 if len(held) == len(self.results) else 1
