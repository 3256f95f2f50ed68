"""Typed configuration: the lane catalogue and the deployment environments."""

from stacks.config.environments import ENVIRONMENTS, Environment, UnknownEnvironment, get_environment
from stacks.config.lanes import Lane

__all__ = ["ENVIRONMENTS", "Environment", "Lane", "UnknownEnvironment", "get_environment"]
