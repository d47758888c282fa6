"""The reliability suite: crash trials, concurrent writers, the isolation matrix.

Every test here is marked ``reliability``; the CI form runs with ``.ci/run`` like
any other test, the long form with ``make reliability`` (see RELIABILITY.md).
"""

from __future__ import annotations

import pytest
from scale import SECONDS, SEED, TRIALS, WRITERS


def pytest_report_header(config: pytest.Config) -> str:
    return (
        f"memloci reliability: {TRIALS} crash trials, {WRITERS} writers x {SECONDS} s, "
        f"seed {SEED} (replay with MEMLOCI_RELIABILITY_SEED={SEED})"
    )
