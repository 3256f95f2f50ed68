"""A turn past its model's tokens a minute waits on the lane without asking the model (Bedrock's
Converse, the local fake), and is answered once the window has room."""

from __future__ import annotations

import json
import math
import time

from pipeline.domain.dependencies.token_rates import model_tokens
from tests.unit.tasks.test_replies import _message, _reply, ai_lane  # noqa: F401 (fixtures)

PER_MINUTE = 11_000


def test_a_turn_past_the_models_tokens_a_minute_is_deferred_without_asking_the_model(ai_lane, graph, model):  # noqa: F811
    settings = json.loads(ai_lane.environ["MODEL_SETTINGS"])
    ai_lane.environ = {**ai_lane.environ, "MODEL_SETTINGS": json.dumps({**settings, "tokens_per_minute": PER_MINUTE})}
    rate = model_tokens(settings["model_id"], PER_MINUTE)
    state = ai_lane.dynamodb.Table("state")
    here = math.floor(time.time() / rate.slice_seconds)
    full = [f"rate#{rate.key}#{n}" for n in range(here, here + 3)]
    for key in full:
        state.put_item(Item={"pk": key, "tokens": rate.per_slice()})
    _message(ai_lane)
    handler = ai_lane.handler()
    for _ in range(2):
        ai_lane.poll(handler, visibility=0)  # stamp, turn (deferred)
    assert model.calls() == []
    assert _reply(ai_lane) is None
    assert ai_lane.depth() == 1
    for key in full:
        state.delete_item(Key={"pk": key})
    handler = ai_lane.handler()
    waited_until = time.monotonic() + 15
    while ai_lane.depth() and time.monotonic() < waited_until:
        ai_lane.poll(handler, visibility=0)
        time.sleep(0.2)
    assert [c.outcome for c in model.calls()] == ["ok"]
    assert len(graph.outbox()) == 1
