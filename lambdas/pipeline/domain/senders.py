"""Who a piece of work is about, as a key that finds their items without naming them.

An erasure request names a person by a phone number or one of Meta's ids; their data is in rows and
items keyed by message, comment and conversation ids. So every item about a person carries
`sender_hash` (schema.SENDER_HASH): an HMAC-SHA256 of their normalised id under a key only the
pipeline holds (adapters/sender_key.py), and the tables index it (schema.SENDER_INDEX). The index
finds a person's items with a query, never a scan of the bodies, and holds no id in clear: without
the key, a hash cannot be tested against the small space of phone numbers.

One normalisation for every source, because the erasure request does not say which kind of id it
names: a phone number in any usual spelling (`+1 (555) 123-4567`, `0015551234567`) becomes its
digits with the country code, as WhatsApp's `wa_id` already is; Meta's ids are digits and stay as
they are. A national number without its country code cannot be told apart from another country's,
so erasure requests must give the international form.

WhatsApp's business-scoped user ids (BSUIDs, Meta's 2026 username rollout) are the one id that is
not digits: a two-letter ISO country code, a dot, and up to 128 letters and digits
(`US.13491208655302741918`), or, for the parent BSUID shared across a business portfolio, the
country code, `ENT` and the id (`US.ENT.11815799212886844830`): the shape Meta's "Business-scoped
user IDs" page and the clients built on it (pywa's `User.from_contact`) give. A BSUID is kept as
Meta sent it, letter case included: Meta asks for it to be sent back exactly. A WhatsApp customer is
named by their phone number when the webhook carries one and by their BSUID when it does not
(`whatsapp_person`); tasks/messages.py says how the two are linked when both are seen.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Iterator, Mapping
from typing import Any

from pipeline import schema

HASH_HEX_DIGITS = 32
"""128 bits: no two people collide in practice, and the index stays small."""
INTERNATIONAL_PREFIX = "00"
_PHONE_SPELLING = re.compile(r"\+?[0-9][0-9 ().\-]*")
_HASH = re.compile(rf"[0-9a-f]{{{HASH_HEX_DIGITS}}}")
_NOT_DIGITS = re.compile(r"[^0-9]")
"""What a phone number spelled as _PHONE_SPELLING allows besides its digits (+, spaces, ().-)."""
BSUID_MAX_ID_CHARACTERS = 128
BSUID = re.compile(rf"[A-Z]{{2}}\.(?:ENT\.)?[A-Za-z0-9]{{1,{BSUID_MAX_ID_CHARACTERS}}}")
"""A business-scoped user id or a parent one (see the module docstring)."""
JOB_PERSON_FIELDS = ("sender", "from", "author", "recipient", "conversation")
"""Where a job's payload names the person it is about, first match wins: the inbound AI turns
(`conversation`, a phone number, a WhatsApp BSUID or an account id), triage of a single comment
(`from`), and any job that says so with `sender`."""


MIN_ID_DIGITS = 6
"""Shorter is no phone number with its country code and no Meta id."""


class SenderKeyUnavailable(RuntimeError):
    """The key could not be read, or what was read is not a usable key."""


class UnusableId(ValueError):
    """An id nothing the pipeline stores is keyed by; the message says what to give instead."""


def is_bsuid(value: object) -> bool:
    return isinstance(value, str) and BSUID.fullmatch(value) is not None


def normalise(sender: str) -> str:
    text = sender.strip()
    if _PHONE_SPELLING.fullmatch(text):
        digits = _NOT_DIGITS.sub("", text)
        rest = digits[len(INTERNATIONAL_PREFIX) :]
        # No country code starts with 0, so what follows a dialled 00 never does either (and a
        # second normalisation changes nothing).
        if not text.startswith("+") and digits.startswith(INTERNATIONAL_PREFIX) and rest[:1] not in ("", "0"):
            return rest
        return digits
    return text


def usable_id(sender: str) -> str:
    """`sender` normalised, if it can name what the pipeline stores: every id a webhook carries
    is digits (phone numbers with their country code, Meta's ids) or a WhatsApp BSUID.
    Raises UnusableId."""
    text = sender.strip()
    normalised = normalise(text)
    if is_bsuid(normalised):
        return normalised
    if not normalised.isdigit():
        raise UnusableId(
            "not an id the pipeline stores (those are digits: a phone number in international form, or "
            "one of Meta's ids; or a WhatsApp business-scoped user id, US.1234...); an email address, a "
            "username or a name finds nothing"
        )
    if _PHONE_SPELLING.fullmatch(text) and text.startswith("0") and not text.startswith(INTERNATIONAL_PREFIX):
        raise UnusableId("a national phone number (starting 0) matches nobody: give it with its country code (+44 ...)")
    if len(normalised) < MIN_ID_DIGITS:
        raise UnusableId("too short for a phone number with its country code or one of Meta's ids")
    return normalised


def sender_hash(key: bytes, sender: str) -> str:
    """The index key of one person: HMAC-SHA256 under the pipeline's key, hex, truncated."""
    normalised = normalise(sender)
    if not normalised:
        raise ValueError("an empty sender id has no hash")
    # surrogatepass: an id JSON spelled with an unpaired surrogate still has a hash (its unit is
    # skipped, tasks/meta.py, but the delivery naming it is indexed); any other id's bytes are its UTF-8.
    raw = normalised.encode("utf-8", "surrogatepass")
    return hmac.new(key, raw, hashlib.sha256).hexdigest()[:HASH_HEX_DIGITS]


def is_hash(value: object) -> bool:
    return isinstance(value, str) and _HASH.fullmatch(value) is not None


def _id(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int):
        return ""
    return str(value)


def _mappings(value: Any) -> Iterator[Mapping[str, Any]]:
    if isinstance(value, list):
        yield from (item for item in value if isinstance(item, Mapping))


def whatsapp_person(phone: str, bsuid: str) -> str:
    """Who a WhatsApp unit is about: the phone number when Meta sent one, else the BSUID (a
    username-only customer, whose number Meta withholds)."""
    return phone or bsuid


def _ids_in_change(value: Mapping[str, Any]) -> Iterator[str]:
    # Both of a WhatsApp customer's ids when Meta sends both: the row is then found by either
    # (the BSUID fields are those of Meta's username rollout; see the module docstring).
    for message in _mappings(value.get("messages")):
        yield _id(message.get("from"))
        yield _id(message.get("from_user_id"))
    for echo in _mappings(value.get("message_echoes")):  # WhatsApp's smb_message_echoes: from the business
        yield _id(echo.get("to"))
    for contact in _mappings(value.get("contacts")):
        yield _id(contact.get("wa_id"))
        yield _id(contact.get("user_id"))
    for status in _mappings(value.get("statuses")):
        yield _id(status.get("recipient_id"))
        yield _id(status.get("recipient_user_id"))
    author = value.get("from")
    if isinstance(author, Mapping):  # a comment or a feed change
        yield _id(author.get("id"))


def people_in_delivery(payload: Any) -> frozenset[str]:
    """Every person a Meta delivery names (normalised): message senders, WhatsApp contacts,
    status recipients, the customer a WhatsApp Business app echo went `to`, comment authors, both
    ends of a Messenger or Instagram event; never the
    business itself (each entry's id: the page, or the WhatsApp Business Account)."""
    found: set[str] = set()
    businesses: set[str] = set()
    entries = payload.get("entry") if isinstance(payload, Mapping) else None
    for entry in _mappings(entries):
        businesses.add(normalise(_id(entry.get("id"))))
        for change in _mappings(entry.get("changes")):
            value = change.get("value")
            if isinstance(value, Mapping):
                found.update(_ids_in_change(value))
        for event in _mappings(entry.get("messaging")):
            for end in ("sender", "recipient"):
                party = event.get(end)
                if isinstance(party, Mapping):
                    found.add(_id(party.get("id")))
    return frozenset(normalise(person) for person in found if person) - businesses - {""}


MAX_NAMED_ON_ROW = 2_500
"""Hashes a webhook row carries at most (16 bytes each, 40 KB): what the 50 KB its body part leaves
of DynamoDB's item limit holds with room to spare. A delivery naming more (a campaign's statuses
beyond that) carries none, and is found through the per-person items its task writes."""


def named_on_row(payload: Any) -> tuple[str | None, tuple[str, ...]]:
    """Who a delivery's row is indexed by: (the one person, ()) or (None, every person, sorted)
    when it names several, or (None, ()) when it names none or too many for a row."""
    people = people_in_delivery(payload)
    if len(people) == 1:
        return next(iter(people)), ()
    if len(people) > MAX_NAMED_ON_ROW:
        return None, ()
    return None, tuple(sorted(people))


def person_in_job(payload: Any) -> str | None:
    """The person a job's payload is about (see JOB_PERSON_FIELDS), or None."""
    if not isinstance(payload, Mapping):
        return None
    for name in JOB_PERSON_FIELDS:
        value = payload.get(name)
        if isinstance(value, Mapping):
            value = value.get("id")
        person = normalise(_id(value))
        if person:
            return person
    return None


# What the webhook lanes store about one person (their messages, the statuses of what was sent to
# them, their comments) lives in that person's own partition of the data table, keyed by their hash:
# an erasure finds it all with one query of the table, so these items need no index entry (a write
# unit each). Other items about a person carry `sender_hash` and are found through the index.
PERSON_PREFIX = "person#"

# A delivery that names several people cannot carry one index key on its row, so each of them gets
# an item in their partition pointing at it (written by the task that processes it). Items written
# before the person partitions sit under DELIVERY_INDEX_PREFIX, found through the index.
DELIVERY_INDEX_PREFIX = "sender#"
DELIVERY_PREFIX = "webhook#"


def person_partition(sender: str) -> str:
    """The data table's partition of everything the webhook lanes store about `sender` (a hash)."""
    return f"{PERSON_PREFIX}{sender}"


def in_person_partition(item: Mapping[str, Any]) -> bool:
    return str(item.get(schema.PK, "")).startswith(PERSON_PREFIX)


def delivery_index_key(sender: str, log_id: str) -> tuple[str, str]:
    """(pk, sk) of the item saying that `sender` (a hash) is named in the delivery `log_id`."""
    return person_partition(sender), f"{DELIVERY_PREFIX}{log_id}"


def indexed_delivery(pk: str, sk: str) -> str | None:
    """The log id an index item points at, or None for any other item."""
    if pk.startswith((PERSON_PREFIX, DELIVERY_INDEX_PREFIX)) and sk.startswith(DELIVERY_PREFIX):
        return sk[len(DELIVERY_PREFIX) :]
    return None
