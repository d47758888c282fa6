"""A maintenance run that gets stuck: ``python maintain_child.py DB``. It runs
``maintain`` with an extractor that waits (10 minutes), so the run holds the store's
maintenance lock until the test kills the process (SIGKILL: it frees nothing)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from consolidation_helpers import SlowRules

from memloci import Memory
from memloci.providers.fake import FakeEmbedder

if __name__ == "__main__":
    mem = Memory(sys.argv[1], embedder=FakeEmbedder(), consolidate_on_session_switch=False)
    mem.service.consolidation.extractor = SlowRules(delay=600)
    mem._call(mem.service.consolidation.maintain())
