"""``memloci`` with one more embedder, ``gated-bge``: the bundled bge-small (the real
model), whose loading waits until the file ``$GATED_EMBEDDER_GATE`` exists (at most two
minutes). A readiness test holds the model back with it and sees /readyz turn from 503
to 200 when it lets it load. Run as ``python gated_serve.py serve …``."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from memloci.providers import base
from memloci.providers.bge import BgeSmallEmbedder


class GatedBge(BgeSmallEmbedder):
    def load(self) -> None:
        gate = Path(os.environ["GATED_EMBEDDER_GATE"])
        deadline = time.monotonic() + 120
        while not gate.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        super().load()


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    base._EMBEDDERS["gated-bge"] = "gated_serve:GatedBge"  # one more name, for this test
    from memloci.interfaces.cli import main

    sys.argv[0] = "memloci"
    main()
