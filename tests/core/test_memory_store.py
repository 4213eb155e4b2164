"""The embedded default's stand-in for Redis forgets expired keys even when nobody reads them again
(each minute's rate-limit window is a new key)."""

from apps.core.hotstate import MemoryStore


def test_expired_keys_that_are_never_read_again_are_forgotten():
    store = MemoryStore()
    for window in range(store.SWEEP_EVERY * 3):
        store.incr(f"rate:{window}", ttl=-1)  # already over: as an old window is
    store.set("kept", "value")  # no expiry: stays

    assert len(store._values) < store.SWEEP_EVERY
    assert store.get("kept") == "value"
