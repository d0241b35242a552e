"""docs/clients.md's Python section against the code: what it says of the
asyncio client's calls (which are coroutines) holds. No server needed."""

import inspect
import os
import re

from frond_client import AsyncFrondClient, FrondClient
from frond_client.aio import AsyncTag
from frond_client.client import Tag

DOCS = os.path.join(os.path.dirname(__file__), "..", "..", "..", "docs", "clients.md")


def section():
    text = open(DOCS, encoding="utf-8").read()
    start = text.index("**`AsyncFrondClient`** has the same calls")
    return text[start:text.index("**`stats()`**", start)]


def names(line):
    return set(re.findall(r"`([a-z_]+)`", line))


def public(cls):
    return {n: m for n, m in inspect.getmembers(cls, inspect.isfunction) if not n.startswith("_")}


def test_async_client_has_every_call_and_the_docs_name_its_coroutines():
    sync, aio = public(FrondClient), public(AsyncFrondClient)
    assert set(sync) == set(aio), "calls of one client only: %s" % (set(sync) ^ set(aio))
    text = section()
    awaited_line = text[text.index("- awaited"):text.index("- plain calls")]
    plain_line = text[text.index("- plain calls"):]
    awaited, plain = names(awaited_line), names(plain_line)
    coroutines = {n for n, m in aio.items() if inspect.iscoroutinefunction(m)}
    tag_coroutines = {n for n, m in public(AsyncTag).items() if inspect.iscoroutinefunction(m)}
    assert coroutines | tag_coroutines == awaited, "the docs' awaited calls %s, the code's %s" % (sorted(awaited), sorted(coroutines | tag_coroutines))
    assert {n for n in aio if n not in coroutines} <= plain
    assert {n for n, m in public(AsyncTag).items() if not inspect.iscoroutinefunction(m)} <= plain
    # The threaded client's tag handle has the same calls, none a coroutine.
    assert set(public(Tag)) == set(public(AsyncTag))
    assert not any(inspect.iscoroutinefunction(m) for m in public(Tag).values())


def test_comparison_table_has_every_cell():
    """docs/clients.md's comparison of the clients: every row has a cell for
    each client (its "an ID from the lease" row had no Python cell)."""
    text = open(DOCS, encoding="utf-8").read()
    rows = []
    for line in text.splitlines():
        if line.startswith("| | Go | Java |"):
            rows = [line]
        elif rows and line.startswith("|"):
            rows.append(line)
        elif rows:
            break
    assert len(rows) > 3, rows

    def cells(row):
        # A cell's text may hold `|` only inside code; none of these rows do.
        return row.strip().strip("|").split("|")

    width = len(cells(rows[0]))
    assert width == 5, rows[0]
    for row in rows[2:]:
        assert len(cells(row)) == width, row


def test_stats_keys_are_the_docs():
    """stats()' keys are those docs/clients.md names (both clients)."""
    text = open(DOCS, encoding="utf-8").read()
    start = text.index("**`stats()`**")
    para = text[start:text.index("\n\n", start)]
    for c in (FrondClient(["http://127.0.0.1:1"]), AsyncFrondClient(["http://127.0.0.1:1"])):
        keys = set(c.stats())
        assert keys == {"calls", "failovers", "waits", "leases"}, keys
        for k in keys | {"counter_leases", "remaining", "size", "shard_bits"}:
            assert "`%s`" % k in para, k
