"""One shared server, one connection per user: specs with a `partition` (apps.credentials gives each
user's calls `partition="u<id>"`) get their own backend, replaced and capped without touching the others."""

import pytest

from apps.connections.errors import ServerUnavailable
from apps.connections.pool import Pool, PoolOptions
from apps.connections.specs import ServerSpec
from tests.connections.conftest import child_pids, inflight, text, tiny_spec
from tests.waiting import eventually_async

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


def for_user(user: str, token: str) -> ServerSpec:
    return tiny_spec("shared", env={"TOKEN": token}, partition=user)


async def test_each_partition_gets_its_own_backend_with_its_own_environment(pool):
    alice, bob = for_user("u1", "alice-token"), for_user("u2", "bob-token")

    assert text(await pool.call_tool(alice, "env", {"name": "TOKEN"})) == "alice-token"
    assert text(await pool.call_tool(bob, "env", {"name": "TOKEN"})) == "bob-token"
    pids = {text(await pool.call_tool(spec, "pid")) for spec in (alice, bob)}

    assert len(pids) == 2 and len(child_pids()) == 2
    assert set((await pool.stats())["servers"]) == {"shared#u1", "shared#u2"}


async def test_a_new_value_replaces_only_that_users_backend(pool):
    alice, bob = for_user("u1", "alice-token"), for_user("u2", "bob-token")
    alice_pid, bob_pid = (
        text(await pool.call_tool(alice, "pid")),
        text(await pool.call_tool(bob, "pid")),
    )

    rotated = for_user("u1", "alice-rotated")
    assert text(await pool.call_tool(rotated, "env", {"name": "TOKEN"})) == "alice-rotated"

    assert text(await pool.call_tool(rotated, "pid")) != alice_pid
    assert text(await pool.call_tool(bob, "pid")) == bob_pid
    await eventually_async(
        lambda: len(child_pids()) == 2, timeout=5, what="alice's old backend to drain and close"
    )


async def test_closing_a_server_by_name_closes_every_users_backend_and_one_key_only_its_own(pool):
    for user in ("u1", "u2", "u3"):
        await pool.call_tool(for_user(user, user), "pid")

    await pool.close("shared#u2")
    await eventually_async(lambda: len(child_pids()) == 2, timeout=5)
    await pool.close("shared")
    await eventually_async(lambda: len(child_pids()) == 0, timeout=5)


async def test_per_user_backends_are_capped_per_server_the_idle_one_making_room():
    async with Pool(PoolOptions(max_partitions_per_server=2)) as pool:
        for user in ("u1", "u2", "u3"):
            await pool.call_tool(for_user(user, user), "pid")
        states = {key: s["state"] for key, s in (await pool.stats())["servers"].items()}

    assert states["shared#u3"] == "open" and sorted(states.values()).count("open") == 2
    assert states["shared#u1"] == "closed", "the least recently used idle one made room"


async def test_in_flight_calls_of_every_user_count_against_one_per_server_limit():
    import asyncio

    async with Pool(PoolOptions(max_inflight_per_server=1)) as pool:
        await pool.call_tool(for_user("u1", "a"), "pid")
        await pool.call_tool(for_user("u2", "b"), "pid")
        slow = asyncio.create_task(pool.call_tool(for_user("u1", "a"), "sleep", {"seconds": 0.5}))
        await eventually_async(lambda: inflight(pool) == 1)
        with pytest.raises(ServerUnavailable, match="'shared' is busy"):
            await pool.call_tool(for_user("u2", "b"), "pid")
        assert text(await slow) == "slept"


def test_the_partition_is_part_of_the_identity_but_not_of_unpartitioned_hashes():
    plain = tiny_spec("shared", env={"TOKEN": "x"})
    alice, bob = (
        tiny_spec("shared", env={"TOKEN": "x"}, partition="u1"),
        tiny_spec("shared", env={"TOKEN": "x"}, partition="u2"),
    )

    assert plain.key == "shared" and alice.key == "shared#u1"
    assert len({plain.config_hash, alice.config_hash, bob.config_hash}) == 3
    assert ServerSpec.from_wire(alice.to_wire()) == alice
    assert "partition" not in plain.to_wire()
    with pytest.raises(ValueError, match="may not appear"):
        tiny_spec("shared", partition="a#b")


async def test_idle_per_user_backends_are_closed_and_forgotten():
    async with Pool(PoolOptions(idle_timeout=0.3)) as pool:
        for user in ("u1", "u2"):
            await pool.call_tool(for_user(user, user), "pid")
        assert len(child_pids()) == 2

        await eventually_async(lambda: not child_pids(), timeout=5)
        await eventually_async(
            lambda: not pool.stats_now()["servers"],
            timeout=5,
            what="the per-user entries to go (one entry per user must not pile up)",
        )
