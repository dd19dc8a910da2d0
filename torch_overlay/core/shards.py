"""Shards balanced by recorded durations: test files for `test/run_test.py --shard`, corpus cases
for `verify gate --shard`.

Greedy longest-first: each item goes to the least-loaded shard (ties: the lowest index), in the
order (-duration, name). The order makes the partition deterministic, so every CI job computes
the same one on its own and each item lands in exactly one shard.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

# Seconds assumed for an item when nothing at all is recorded (only the ratio between items
# matters then: every item costs the same).
DEFAULT_DURATION = 30.0


def estimates(names: Sequence[str], times: Mapping[str, float]) -> dict[str, float]:
    """Recorded duration per name; unknown names get the average, so a new item is not free."""
    default = sum(times.values()) / len(times) if times else DEFAULT_DURATION
    return {name: times.get(name, default) for name in names}


def partition(names: Sequence[str], total: int, times: Mapping[str, float]) -> list[list[str]]:
    """All `total` shards, each sorted by name: every name in exactly one."""
    cost = estimates(names, times)
    loads = [0.0] * total
    assigned: list[list[str]] = [[] for _ in range(total)]
    for name in sorted(set(names), key=lambda n: (-cost[n], n)):
        target = min(range(total), key=lambda index: (loads[index], index))
        loads[target] += cost[name]
        assigned[target].append(name)
    return [sorted(names_of_shard) for names_of_shard in assigned]


def shard(names: Sequence[str], which: int, total: int, times: Mapping[str, float]) -> list[str]:
    """Shard `which` (1-based) of `total`."""
    return partition(names, total, times)[which - 1]
