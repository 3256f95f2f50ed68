"""The dependencies behind a lane and what bounds them.

Budgets of calls at once (`budgets.py`, also the tenant caps), of calls a second or a minute
(`rates.py`) and of a model's tokens a minute (`token_rates.py`); how Bedrock's and Meta's answers
are classed (`model.py`, `meta_send.py`); when a lane stops for its dependency, refused outright or
failing at a sustained rate (`lane_pause.py`, `failure_rate.py`), and how the probe brings it back
on the ramp (`lane_probe.py`, `ramp.py`). The consumer and its tasks use these; nothing here
imports the consumer.
"""
