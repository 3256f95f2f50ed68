"""The runtime's own reads of Lambda's control plane: an event source mapping's settings and a
function's configuration, from moto's Lambda backend itself.

The runtime plays the Lambda service, so it reads its settings where the service keeps them. A
change made through the API (`lanectl pause` disabling a mapping, a function reconfigured through
the AWS endpoint) lands in that backend and is seen on the next read. Through boto3 the same reads
took a full HTTP-shaped round trip each, about nine a second for the pollers and the
configuration refresh: 6% of the runtime's CPU under load (py-spy, --gil).
"""

from __future__ import annotations

from typing import Any

from local_aws.deploy import REGION


def _backend() -> Any:
    from moto.awslambda.models import lambda_backends
    from moto.core import DEFAULT_ACCOUNT_ID

    return lambda_backends[DEFAULT_ACCOUNT_ID][REGION]


def mapping_configuration(uuid: str) -> dict[str, Any]:
    """GetEventSourceMapping's answer, as a dict. KeyError if the mapping is gone."""
    mapping = _backend().get_event_source_mapping(uuid)
    if mapping is None:
        raise KeyError(f"no event source mapping {uuid}")
    return dict(mapping.get_configuration())


def function_configuration(name: str) -> dict[str, Any]:
    """GetFunctionConfiguration's answer for $LATEST, as a dict."""
    return dict(_backend().get_function(name).get_configuration())
