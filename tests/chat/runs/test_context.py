"""A 500-round run's context stays under the limit: the task and the latest rounds whole, older
tool results cut short, the oldest rounds left out with a note."""

from __future__ import annotations

from apps.chat.runs import context

BIG = "x" * 3000


def _steps(count: int) -> list[dict]:
    return [
        {
            "round": n,
            "text": f"round {n}",
            "tool_calls": [
                {
                    "id": f"c{n}",
                    "name": "echo",
                    "arguments": {"text": "hi"},
                    "isError": False,
                    "result": {"content": [{"type": "text", "text": f"{n}:{BIG}"}]},
                },
            ],
        }
        for n in range(1, count + 1)
    ]


def _build(count: int, limit: int = 40_000, keep: int = 4) -> context.Context:
    return context.build(
        "The task", _steps(count), limit=limit, keep_rounds=keep, result_chars=16_000
    )


def test_a_short_run_is_sent_whole():
    ctx = _build(3)
    assert ctx.omitted_rounds == 0
    assert [m.role for m in ctx.messages] == ["system", "user"] + ["assistant", "tool"] * 3
    assert ctx.messages[1].text == "The task"
    assert all(m.text.endswith(BIG) for m in ctx.messages if m.role == "tool")


def test_older_results_are_cut_and_the_latest_rounds_kept_whole():
    ctx = _build(10, limit=1_000_000)
    tools = [m for m in ctx.messages if m.role == "tool"]
    assert [len(m.text) > 3000 for m in tools] == [False] * 6 + [True] * 4
    assert tools[0].text.startswith("1:xxx")


def test_500_rounds_stay_under_the_limit_and_keep_the_task():
    sizes = {n: _build(n).chars for n in (10, 100, 500)}
    naive = {n: _build(n, limit=10**9, keep=10**6).chars for n in (10, 100, 500)}
    assert all(size <= 40_000 for size in sizes.values())
    assert naive[500] > 10 * sizes[500]
    ctx = _build(500)
    assert 300 < ctx.omitted_rounds < 500
    assert ctx.messages[1].text.startswith("The task") and "left out" in ctx.messages[1].text
    # Calls and their results stay paired after leaving rounds out.
    roles = [m.role for m in ctx.messages[2:]]
    assert roles == ["assistant", "tool"] * (len(roles) // 2)
    assert ctx.messages[-1].text.startswith("500:")
