"""Write ``src/memloci/data/intent_exemplars.json``: the intent exemplars of
:mod:`memloci.retrieval.intent` fitted with each bundled embedder (int8 bge-small-en, the
default; int8 MiniLM, for stores made with it), so a new process classifies query
intents without embedding the exemplars first.

Run it after changing ``LANGUAGES`` (the English and Russian exemplars; a stale file
is ignored: it is keyed by a hash of the exemplars and by the model id);
``tests/unit/test_intent_preset.py`` checks that the shipped file is current and
matches a fresh fit.

    python scripts/intent_exemplars.py
"""

from __future__ import annotations

import json

import numpy as np

from memloci.providers.bge import BgeSmallEmbedder
from memloci.providers.minilm_int8 import OnnxMiniLMEmbedder
from memloci.retrieval.intent import LANGUAGES, PRESET, exemplars_digest, fit_exemplars


def _short(x: float) -> float:
    """The shortest decimal that reads back as the same float32."""
    return float(str(np.float32(x)))


def main() -> None:
    models = {}
    for embedder in (BgeSmallEmbedder(), OnnxMiniLMEmbedder()):
        models[embedder.model_id] = {
            lang: {
                "mean": [_short(x) for x in mean],
                "directions": [[_short(x) for x in row] for row in directions],
            }
            for lang, (mean, directions) in fit_exemplars(embedder).items()
        }
    data = {
        "exemplars": exemplars_digest(),
        "written_by": "scripts/intent_exemplars.py",
        "models": models,
    }
    PRESET.write_text(json.dumps(data) + "\n", encoding="utf-8")
    print(f"wrote {PRESET} ({', '.join(models)}; {', '.join(LANGUAGES)})")


if __name__ == "__main__":
    main()
