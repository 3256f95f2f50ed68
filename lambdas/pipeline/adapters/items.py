"""DynamoDB's typed wire format to and from plain Python values: the one module that spells a
type tag. Every adapter builds its items, keys and ExpressionAttributeValues with `to_item` (or
`key`, for a one-attribute key) and reads what DynamoDB answers with `from_item` (or `read`, for
one attribute); `lanectl` and the local runtime's drivers (ops/) use the same functions.
tests/infra/test_item_codec_only.py fails on an adapter that spells a tag itself.

Encoding, by the value's type:
- str -> S, bool -> BOOL, None -> NULL, bytes (or bytearray) -> B;
- int and Decimal -> N as their `str` (a Decimal keeps its places); `Milliseconds(at)` -> N with
  exactly three decimals, the rows' times, as every byte of a row is paid for;
- float -> N through its `repr`, never `Decimal(value)` (that would store 1.1 as
  1.100000000000000088...); an exponent is spelt as Decimal spells it, like boto3's serializer;
- set or frozenset of str -> SS, of bytes -> BS, of numbers -> NS, members sorted so that the
  same set is the same request bytes every time;
- list or tuple -> L, any Mapping -> M (keys as str).
Anything else raises TypeError naming its type. What DynamoDB would refuse raises ValueError
before any call is made: an empty set, NaN or an infinity, and a number of more than 38 digits or
outside 1E-130 to 9.9E+125 in size. Numbers are checked with boto3's own Decimal context, so this
refuses what boto3's serializer refused (that context lets through a few at the very edges of the
range, which DynamoDB then refuses); an int under 10**38 or a float without an exponent needs no
check.

Decoding: S -> str, N -> Decimal, B -> bytes, BOOL -> bool, NULL -> None, SS/NS/BS -> set,
L -> list, M -> dict. An unknown tag raises TypeError naming it.

The webhook door encodes its row with this on every delivery, so it is a dispatch on the value's
exact type, not boto3's TypeSerializer (which tries each type in turn through isinstance checks
and re-parses every number through a Decimal context); bench/ingress_bench.py measures the door.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from collections.abc import Set as AbstractSet
from decimal import Decimal
from typing import Any, overload

from boto3.dynamodb.types import DYNAMODB_CONTEXT


def _string(value: str) -> dict[str, Any]:
    return {"S": value}


def _boolean(value: bool) -> dict[str, Any]:
    return {"BOOL": value}


def _null(value: None) -> dict[str, Any]:
    return {"NULL": True}


def _binary(value: bytes | bytearray) -> dict[str, Any]:
    return {"B": value}


def _checked_text(number: Decimal) -> str:
    if not number.is_finite():
        raise ValueError(f"DynamoDB numbers are finite, not {number}")
    try:
        # boto3's own context: 38 digits, from 1E-130 to 9.99..E+125 in size, nothing rounded.
        return str(DYNAMODB_CONTEXT.create_decimal(number))
    except ArithmeticError:
        raise ValueError(
            f"DynamoDB numbers have at most 38 digits, from 1E-130 to 9.9E+125 in size, not {number}"
        ) from None


_PLAIN_NUMBER = "0123456789.-"
"""A number's text made only of these (no exponent, no NaN or Infinity), at most 38 characters
long, has at most 38 digits and lies in DynamoDB's range: it needs no further check."""


def _integer_text(value: int) -> str:
    text = str(value)
    return text if len(text) <= 38 else _checked_text(Decimal(value))


def _integer(value: int) -> dict[str, Any]:
    return {"N": _integer_text(value)}


def _float_text(value: float) -> str:
    text = repr(value)  # at most 17 digits; without an exponent, between 1E-4 and 1E+16 in size
    return text if not text.strip(_PLAIN_NUMBER) else _checked_text(Decimal(text))


def _float(value: float) -> dict[str, Any]:
    return {"N": _float_text(value)}


def _decimal_text(value: Decimal) -> str:
    text = str(value)
    return text if len(text) <= 38 and not text.strip(_PLAIN_NUMBER) else _checked_text(value)


def _decimal(value: Decimal) -> dict[str, Any]:
    return {"N": _decimal_text(value)}


def _list(value: list[Any] | tuple[Any, ...]) -> dict[str, Any]:
    return {"L": [to_attribute(member) for member in value]}


def _map(value: Mapping[Any, Any]) -> dict[str, Any]:
    return {"M": {str(name): to_attribute(member) for name, member in value.items()}}


def _number_text(value: Any) -> str:
    if isinstance(value, float):
        return _float_text(value)
    if isinstance(value, Decimal):
        return _decimal_text(value)
    return _integer_text(value)


def _set(value: AbstractSet[Any]) -> dict[str, Any]:
    if not value:
        raise ValueError("DynamoDB has no empty sets: leave the attribute out instead")
    if all(isinstance(member, str) for member in value):
        return {"SS": sorted(value)}
    if all(isinstance(member, bytes | bytearray) for member in value):
        return {"BS": sorted(value)}
    if all(isinstance(member, int | float | Decimal) and not isinstance(member, bool) for member in value):
        return {"NS": [_number_text(member) for member in sorted(value)]}
    kinds = ", ".join(sorted({type(member).__name__ for member in value}))
    raise TypeError(f"a DynamoDB set holds strings, bytes or numbers of one kind, not {kinds}")


class Milliseconds:
    """An epoch time rounded to the millisecond, written as a Number with exactly three decimals
    (`f"{at:.3f}"`, the text the rows always had): a float's repr would store up to three more
    digits that nothing reads. Not a Decimal: making one and spelling it back cost the door about
    3 us more a delivery (of about 240, the hot path of bench/ingress_bench.py). It reads back as
    a Decimal, like any Number."""

    __slots__ = ("text",)

    def __init__(self, at: float) -> None:
        text = f"{at:.3f}"
        if not text[-1].isdigit():  # inf or nan
            raise ValueError(f"DynamoDB numbers are finite, not {at}")
        self.text = text

    def __repr__(self) -> str:
        return f"Milliseconds({self.text})"


def _milliseconds(value: Milliseconds) -> dict[str, Any]:
    return {"N": value.text}


_Encoder = Callable[[Any], dict[str, Any]]

_ENCODERS: dict[type, _Encoder] = {
    str: _string,
    bool: _boolean,
    type(None): _null,
    bytes: _binary,
    bytearray: _binary,
    int: _integer,
    float: _float,
    Decimal: _decimal,
    list: _list,
    tuple: _list,
    dict: _map,
    set: _set,
    frozenset: _set,
    Milliseconds: _milliseconds,
}


def _encoder_of(value: Any) -> _Encoder:
    """For subclasses (a StrEnum, an IntEnum, a mapping proxy): the first base type it has."""
    if isinstance(value, bool):
        return _boolean
    for kind, encoder in _ENCODERS.items():
        if isinstance(value, kind):
            return encoder
    if isinstance(value, Mapping):
        return _map
    if isinstance(value, AbstractSet):
        return _set
    raise TypeError(f"no DynamoDB type for a {type(value).__name__} value")


def to_attribute(value: Any) -> dict[str, Any]:
    return (_ENCODERS.get(type(value)) or _encoder_of(value))(value)


def to_item(values: Mapping[str, Any]) -> dict[str, Any]:
    """An item, a key or ExpressionAttributeValues from plain values, attribute by attribute."""
    return {name: (_ENCODERS.get(type(value)) or _encoder_of(value))(value) for name, value in values.items()}


def key(name: str, value: Any) -> dict[str, Any]:
    """A one-attribute key (a table's `id`, the state table's `pk`)."""
    return {name: to_attribute(value)}


def _binary_value(value: Any) -> bytes:
    return value if type(value) is bytes else bytes(value)


_DECODERS: dict[str, Callable[[Any], Any]] = {
    "S": str,
    "N": Decimal,
    "B": _binary_value,
    "BOOL": bool,
    "NULL": lambda value: None,
    "SS": set,
    "NS": lambda value: {Decimal(member) for member in value},
    "BS": lambda value: {_binary_value(member) for member in value},
    "L": lambda value: [from_attribute(member) for member in value],
    "M": lambda value: {name: from_attribute(member) for name, member in value.items()},
}


def from_attribute(raw: Mapping[str, Any]) -> Any:
    if len(raw) != 1:
        raise ValueError(f"a DynamoDB attribute value has one type, not {sorted(raw)}")
    [(tag, value)] = raw.items()
    decoder = _DECODERS.get(tag)
    if decoder is None:
        raise TypeError(f"no DynamoDB type named {tag!r}")
    return decoder(value)


@overload
def from_item(raw: Mapping[str, Any]) -> dict[str, Any]: ...
@overload
def from_item(raw: None) -> None: ...
@overload
def from_item(raw: Mapping[str, Any] | None) -> dict[str, Any] | None: ...


def from_item(raw: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if raw is None:
        return None
    return {name: from_attribute(value) for name, value in raw.items()}


def read(raw: Mapping[str, Any] | None, name: str, default: Any = None) -> Any:
    """One attribute of a raw item as a plain value; `default` when the item or the attribute is
    missing."""
    value = None if raw is None else raw.get(name)
    return default if value is None else from_attribute(value)
