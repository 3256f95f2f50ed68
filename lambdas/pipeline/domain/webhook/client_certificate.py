"""Whose client certificate a request came with: the common name read out of the subject that
API Gateway passes on after verifying the certificate against the truststore (mutual TLS).

The chain alone proves little when the truststore holds a public CA, which certifies anyone; the
door admits a webhook only when the certificate's one common name is the one configured. Pure.
"""

from __future__ import annotations

_COMMON_NAME_TYPES = ("cn", "2.5.4.3")
_HEX = "0123456789abcdefABCDEF"


class MalformedSubject(ValueError):
    """The subject is not a distinguished name as RFC 4514 writes one."""


def _attributes(subject: str) -> list[str]:
    """The `type=value` pairs of every RDN, with escapes undone in the values."""
    found: list[str] = []
    current: list[str] = []
    i = 0
    while i < len(subject):
        char = subject[i]
        if char == "\\":
            following = subject[i + 1 : i + 3]
            if len(following) == 2 and all(c in _HEX for c in following):
                current.append(chr(int(following, 16)))
                i += 3
                continue
            if i + 1 >= len(subject):
                raise MalformedSubject("the subject ends in a lone backslash")
            current.append(subject[i + 1])
            i += 2
            continue
        if char in ",+":
            found.append("".join(current))
            current = []
        else:
            current.append(char)
        i += 1
    found.append("".join(current))
    return found


def common_names(subject: str) -> tuple[str, ...]:
    """Every common name in `subject` (like `CN=a.example.com,O=Example\\, Inc.,C=US`)."""
    names = []
    for attribute in _attributes(subject):
        kind, sep, value = attribute.partition("=")
        if not sep:
            raise MalformedSubject(f"{attribute.strip()!r} is not type=value")
        if kind.strip().lower() in _COMMON_NAME_TYPES:
            names.append(value.strip())
    return tuple(names)


def is_from(subject: str | None, expected: str) -> bool:
    """Whether the certificate names exactly one common name, and it is `expected` (host names
    compare without case)."""
    if not subject:
        return False
    try:
        names = common_names(subject)
    except MalformedSubject:
        return False
    return len(names) == 1 and names[0].lower() == expected.lower()
