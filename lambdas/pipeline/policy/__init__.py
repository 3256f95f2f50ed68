"""Typed policy: what the stack decides and the functions act on, as frozen dataclasses.

The stack builds these from the catalogue (constructing one validates it, so a bad catalogue fails
`cdk synth`), writes them into the functions' environment with `codec.dumps`, and the functions
read them back with `codec.loads` (through `pipeline.settings`). Domain code receives these
objects and never parses the environment.
"""
