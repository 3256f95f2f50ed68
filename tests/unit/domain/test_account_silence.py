"""Which source accounts a delivery names, how often an instance notes them, and which accounts
normally send and have gone quiet (domain/webhook/account_silence.py)."""

from __future__ import annotations

import pytest

from pipeline.domain.webhook.account_silence import Account, NoteThrottle, Seen, accounts_in, quiet_accounts, slot_of
from pipeline.settings.silence_policy import AccountSilence

POLICY = AccountSilence(
    note_seconds=60, slot_seconds=3600, slots=24, active_slots=20, quiet_seconds=7200, forget_seconds=7 * 86400
)
T0 = 1_800_000_000.0 - 1_800_000_000.0 % 3600


def _seen(account: str, last_seen: float, active_hours: int) -> Seen:
    """An account heard from in the `active_hours` hours up to and including its last delivery's."""
    last = slot_of(last_seen, POLICY)
    return Seen(account, "page", last_seen, frozenset(range(last - active_hours + 1, last + 1)))


def test_a_delivery_names_each_entrys_account_once_with_its_product():
    payload = {"object": "page", "entry": [{"id": "111"}, {"id": 222}, {"id": "111"}, {"id": "bad id!"}]}

    assert accounts_in(payload) == [Account("111", "page"), Account("222", "page")]


@pytest.mark.parametrize(
    "payload",
    [None, [], {"object": "user", "entry": [{"id": "1"}]}, {"object": "page"}, {"object": "page", "entry": "x"}],
)
def test_a_delivery_of_no_known_object_or_without_entries_names_no_account(payload):
    assert accounts_in(payload) == []


def test_whatsapp_and_instagram_accounts_carry_their_product():
    assert accounts_in({"object": "whatsapp_business_account", "entry": [{"id": "9"}]}) == [Account("9", "whatsapp")]
    assert accounts_in({"object": "instagram", "entry": [{"id": "8"}]}) == [Account("8", "instagram")]


def test_an_instance_notes_an_account_at_most_once_per_interval():
    # Given a throttle that just noted an account
    throttle = NoteThrottle(POLICY)
    a, b = Account("a", "page"), Account("b", "page")
    assert throttle.due([a], T0) == [a]
    # When the same account comes again within the interval, beside a new one
    # Then only the new one is due; after the interval the first is due again
    assert throttle.due([a, b], T0 + 59) == [b]
    assert throttle.due([a, b], T0 + 60) == [a]


def test_an_accounts_first_delivery_in_a_new_slot_is_noted_within_the_interval():
    # Given an hourly slot and an account noted a second before the slot ends
    policy = AccountSilence(
        note_seconds=3600, slot_seconds=3600, slots=24, active_slots=20, quiet_seconds=7200, forget_seconds=86400
    )
    throttle = NoteThrottle(policy)
    a = Account("a", "page")
    assert throttle.due([a], T0 + 3599) == [a]
    # When it delivers again two seconds later, in the next slot
    # Then it is noted, so that slot is marked; later in the same slot it is not
    assert throttle.due([a], T0 + 3601) == [a]
    assert throttle.due([a], T0 + 5000) == []


def test_an_account_heard_from_in_enough_slots_up_to_its_last_delivery_normally_sends():
    assert _seen("steady", T0, active_hours=20).normally_sends(POLICY)
    assert not _seen("daytime", T0, active_hours=19).normally_sends(POLICY)


def test_slots_before_the_window_ending_at_the_last_delivery_do_not_count():
    last = slot_of(T0, POLICY)
    old = Seen("old", "page", T0, frozenset({last, *range(last - 40, last - 24)}))

    assert old.active_slots(POLICY) == 1


def test_only_accounts_that_normally_send_and_are_quiet_too_long_are_quiet_longest_first():
    # Given a steady account quiet for just over the limit, one quiet far longer, one quiet only
    # up to the limit, and an account that rarely sends, quiet for days
    now = T0 + 10 * 86400
    steady = _seen("steady", now - POLICY.quiet_seconds - 1, 24)
    longest = _seen("longest", now - 3 * 86400, 24)
    recent = _seen("recent", now - POLICY.quiet_seconds, 24)
    rare = _seen("rare", now - 5 * 86400, 2)

    # When the quiet ones are picked
    quiet = quiet_accounts([steady, longest, recent, rare], now, POLICY)

    # Then the silence counted from the last delivery keeps the long-quiet account paging
    assert [s.account for s in quiet] == ["longest", "steady"]


def test_an_item_read_back_keeps_its_slots_and_ignores_other_attributes():
    seen = Seen.from_item("a", {"last_seen": 12.5, "product": "page", "s3": 7, "s10": 9, "sk": "a", "expires_at": 1})

    assert seen == Seen("a", "page", 12.5, frozenset({7, 9}))


@pytest.mark.parametrize(
    "changes",
    [
        {"note_seconds": 0},
        {"note_seconds": 3601},
        {"active_slots": 25},
        {"active_slots": 0},
        {"slots": 200, "active_slots": 1},
        {"quiet_seconds": 60},
        {"forget_seconds": 7200},
    ],
)
def test_a_policy_that_contradicts_itself_is_refused(changes):
    fields = {**POLICY.__dict__, **changes}
    with pytest.raises(ValueError, match="account silence needs"):
        AccountSilence(**fields)
