"""An expression is parsed once per distinct text, not two or three times per write.

Every UpdateItem (and every Update of a transaction) makes moto parse its update expression twice
(the request handler parses it to validate, the backend parses it again), deep-copy the tree before
validating it against the item (twice for a new item), and lex its condition expression from the
text with regular expressions compiled on each token. None of that depends on anything but the
expression's text, which the pipeline's adapters build from a handful of templates, and it was a
fifth of the local runtime's CPU in the auto-reply soak (`bench/cpu_by_part.py`): a parse ~210 us,
a deep copy of its tree ~190 us, against DynamoDB's answer being the point.

Here the parsed update tree is kept per expression text as pickled bytes and each use gets a fresh
tree of its own (unpickled, ~35 us), the validator's copy of a tree is a pickle round trip instead
of a deep copy (~75 us), and a condition's tokens are kept per text (tuples of immutable tokens;
each parse gets its own deque). A text moto refuses raises as before and is not kept. Names and
values are resolved after these steps, per call, as moto does. What a write answers and stores is
moto's own: tests/unit/runtime/test_moto_expressions.py runs the same writes with and without
this and compares every answer and item.
"""

from __future__ import annotations

import copy
import functools
import pickle
from collections import deque
from typing import Any

_PATCHED = False
_KEPT = 4096
"""Distinct expression texts kept: the adapters write a few dozen; a bound, not a working size."""


def install() -> None:
    global _PATCHED
    if _PATCHED:
        return
    from moto.dynamodb import comparisons
    from moto.dynamodb.parsing import expressions, validators

    parser = expressions.UpdateExpressionParser  # type: ignore[attr-defined]
    original_make = parser.make.__func__

    @functools.lru_cache(maxsize=_KEPT)
    def parsed(expression: str) -> bytes:
        return pickle.dumps(original_make(parser, expression), pickle.HIGHEST_PROTOCOL)

    @functools.wraps(original_make)
    def make(cls: type, expression_str: str) -> Any:
        if cls is not parser or not isinstance(expression_str, str):
            return original_make(cls, expression_str)
        return pickle.loads(parsed(expression_str))  # noqa: S301 - bytes this process pickled

    parser.make = classmethod(make)  # type: ignore[method-assign,assignment]
    validators.deepcopy = _copy  # type: ignore[assignment]

    condition = comparisons.ConditionExpressionParser
    original_lex = condition._lex_condition_expression

    @functools.lru_cache(maxsize=_KEPT)
    def tokens(expression: str) -> tuple[Any, ...]:
        lexer = condition(expression, None, None)
        return tuple(original_lex(lexer))

    @functools.wraps(original_lex)
    def lex(self: Any) -> deque[Any]:
        return deque(tokens(self.condition_expression))

    condition._lex_condition_expression = lex  # type: ignore[method-assign]
    _PATCHED = True


def _copy(value: Any) -> Any:
    """A deep copy by pickling, which moto's trees allow; anything that cannot be pickled is
    deep-copied as before."""
    try:
        return pickle.loads(pickle.dumps(value, pickle.HIGHEST_PROTOCOL))  # noqa: S301 - pickled just now
    except (pickle.PicklingError, TypeError, AttributeError):
        return copy.deepcopy(value)
