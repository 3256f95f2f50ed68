"""One synthesized template for every scenario test in this process (synthesis takes seconds);
each test still gets a fresh runtime deployed from it."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def harness():
    from bench.scenarios.harness import Harness

    h = Harness(plot_dir=None)
    _ = h.synthesized
    yield h
    h.close()
