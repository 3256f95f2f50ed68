"""The consumer's rules: one batch of a lane's records from parse to settle, in one direction.

`batch.py` runs a batch (parse, read the obligations, cheap checks, tenant caps) and hands each
record to `task_step.py` (its task and commit), which hands the outcome to `settling.py` (the
outcomes that write, and the batch's closing calls). Around them: the task contract (`work.py`,
`task_context.py`, and `token_budgeted.py`, the model wrapped in its token budget), the done-marks
(`marks.py`, `commit_plan.py`, and `generations.py`, how a replay re-opens
them once per generation), outcomes and retries (`outcomes.py`,
`retry.py`), the time rules (`batch_time.py`, `settle_reserve.py`, `deadline_watch.py`,
`time_limit.py`, `service_times.py`) and its settings (`config.py`). Its ports are in `ports.py`.
"""
