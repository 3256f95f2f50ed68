"""The embedded default: the pipeline's synthesized template deployed into an in-process moto
backend, with this package playing the parts of AWS that moto does not run (Lambda invocation,
event source mappings, API Gateway, schedules, CloudWatch metrics and alarms)."""
