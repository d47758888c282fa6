"""The domain rules every store applies (memloci.rules), checked as pure functions."""

from __future__ import annotations

import itertools
import math

from memloci.models import MemoryNode, NodeType, Scope, short_id, utcnow
from memloci.rules import reinforced, revised


def test_reinforcement_grows_with_the_log_of_reads_and_stops_at_one() -> None:
    assert reinforced(0.5, 0) == 0.5 + 0.05 * math.log1p(1 / 20)
    gains = [reinforced(0.5, n) - reinforced(0.5, n - 1) for n in range(1, 50)]
    assert all(a > b for a, b in itertools.pairwise(gains))  # slower and slower
    assert reinforced(0.99, 10_000) == 1.0


def test_a_new_text_or_a_value_set_is_a_new_version_and_a_new_text_is_embedded_again() -> None:
    now = utcnow()
    node = MemoryNode(
        id=short_id(),
        namespace="default",
        type=NodeType.SEMANTIC,
        scope=Scope.GLOBAL,
        content="likes tea",
        version=3,
        event_time=now,
        created_at=now,
        updated_at=now,
        valid_from=now,
    )
    changes: dict[str, object] = {}
    assert revised(node, changes, content="likes coffee", set_value=False, value=None)
    assert changes == {"version": 4, "content": "likes coffee", "embedded": False}

    changes = {}
    assert not revised(node, changes, content=None, set_value=True, value={"drink": "tea"})
    assert changes == {"value": {"drink": "tea"}, "version": 4}

    changes = {}
    assert not revised(node, changes, content="likes tea", set_value=False, value=None)
    assert changes == {}  # the same text: no version
