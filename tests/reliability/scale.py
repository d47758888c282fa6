"""How big the reliability runs are. The CI form is the default; the long form
(``make reliability``) raises these through environment variables:

- ``MEMLOCI_RELIABILITY_TRIALS``  SIGKILL crash trials (CI 20, long 300)
- ``MEMLOCI_RELIABILITY_WRITERS`` writer processes beside one reader (CI 4, long 6)
- ``MEMLOCI_RELIABILITY_SECONDS`` how long each writer writes (CI 5, long 60)
- ``MEMLOCI_RELIABILITY_SEED``    seed for kill points and contents (default: random,
  printed with every failure so a run can be replayed)

Read once at import (the test fixtures clear ``MEMLOCI_*`` from the environment).
"""

from __future__ import annotations

import os
import random


def _int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    return int(raw) if raw else default


TRIALS = _int("MEMLOCI_RELIABILITY_TRIALS", 20)
WRITERS = _int("MEMLOCI_RELIABILITY_WRITERS", 4)
SECONDS = _int("MEMLOCI_RELIABILITY_SECONDS", 5)
SEED = _int("MEMLOCI_RELIABILITY_SEED", random.SystemRandom().randrange(1 << 30))
