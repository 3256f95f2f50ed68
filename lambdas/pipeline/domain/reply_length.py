"""Meta's limit on a reply's length, and the rule that keeps a reply under it. Pure.

A text message may hold 4,096 characters on WhatsApp and 2,000 on Messenger and Instagram; Meta
refuses a longer one outright. Characters are counted as UTF-16 code units (an emoji outside the
Basic Multilingual Plane counts two), the larger of the ways Meta may count, so a reply that fits
here fits there.

The rule: a reply over its channel's limit is cut, never split into several messages (each would
be a send of its own, billed and ordered separately): it keeps the longest beginning that ends at
a blank within the last `WORD_BACKTRACK` characters before the limit (a hard cut when there is
none), with the blanks at its end removed and an ellipsis (…) added, all within the limit.
"""

from __future__ import annotations

LIMITS = {"whatsapp": 4096, "messenger": 2000, "instagram": 2000}
ELLIPSIS = "…"
WORD_BACKTRACK = 200


def units(text: str) -> int:
    """The text's length in UTF-16 code units."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def fit(text: str, channel: str) -> str:
    """`text` as it may be sent on `channel`: itself when it fits, cut by the module's rule when not."""
    limit = LIMITS.get(channel)
    if limit is None or units(text) <= limit:
        return text
    room = limit - units(ELLIPSIS)
    end = 0
    used = 0
    for index, char in enumerate(text):
        used += units(char)
        if used > room:
            break
        end = index + 1
    head = text[:end]
    blank = max(head.rfind(" "), head.rfind("\n"))
    if blank >= end - WORD_BACKTRACK and blank > 0:
        head = head[:blank]
    return head.rstrip() + ELLIPSIS
