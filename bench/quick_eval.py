"""Quick dev-loop evaluation of hybrid search on the turn and fact splits (not a benchmark).

    python bench/quick_eval.py [--store-dir DIR] [--recipes hybrid,core] [--k 10] [--by-category]
        [--reranker minilm-ce] [--rename-speakers] [--embedder bge-small]
        [--splits turns,facts,messages,roles,roleq,fullnames,handles,fillers,chatspeak,shortnames,
                  misspelt,lowerlabels,relabelled,pinpoint,renamed,typos]

Ingests each split once into ``DIR`` (kept between runs when given, so changing
the ranking code and re-running costs only the questions), then asks every scored
question and prints recall_any@1/5/k per recipe. ``retrieval_bench.py`` is the
reference run; this is for iterating on ranking without re-embedding every time.

Splits: ``turns`` (LoCoMo turns as episodes), ``facts`` (its observations through
``remember``), ``messages`` (each turn cut into its sentences, one short message each,
a turn's evidence held by any of them: a stand-in for real chats, where people send
several short messages instead of one long turn), ``roles`` (those messages with the
speakers labelled ``user`` / ``assistant`` instead of by name, the questions still
naming them), ``roleq`` (those asked about as "the user" / "the assistant"),
``fullnames`` (those messages with the speakers labelled by a full name, "Caroline
Okafor", the questions using the first name), ``handles`` (labelled by a
user name that begins with the first name, "caroline17"), ``fillers`` (the messages with
a filler, "lol", "ok", an emoji, after about 30 % of them; never evidence), ``chatspeak``
(the messages typed in chat shorthand, "bday", "tmrw", "u", half in lower case),
``shortnames`` (the messages asked about by a shortened form of the speakers' names,
"Caro" for "Caroline"), ``misspelt`` (asked about with the names misspelt, "Carroline",
"Melania"), ``lowerlabels`` (the speakers labelled by their names in lower case,
"caroline"), ``relabelled`` (labelled by the first name, later by a full name),
``typos`` (the turns asked with a typo in a word of each question, "resaerch"),
``pinpoint`` (the messages scored by the message that holds a word of the answer, not by
any message of its turn), ``renamed`` (pinpoint asked about by names no memory holds,
"Robin" for Caroline; ``--rename-speakers`` asks any split so).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from common import (
    DEFAULT_DATA,
    chat_split,
    ingest_turn,
    load_conversations,
    renamed_questions,
    settle,
)
from memloci import Memory

FACTS = DEFAULT_DATA.with_name("locomo_facts_dev.jsonl")
STORE_OF = {"renamed": "pinpoint", "typos": "turns"}  # splits that ask another's store


def open_split(
    path: Path,
    data: Path,
    facts: bool,
    reranker: str = "none",
    embedder: str = "local",
    split: str = "turns",
) -> tuple[Memory, list[dict]]:
    convs = chat_split(load_conversations(data), split)
    fresh = not path.exists()
    mem = Memory(str(path), reinforce_on_search=False, reranker=reranker, embedder=embedder)
    if fresh:
        for conv in convs:
            for t in conv["turns"]:
                ingest_turn(mem, conv, t, facts)
        settle(mem)
    return mem, convs


def evaluate(
    mem: Memory,
    convs: list[dict],
    recipe: str,
    k: int,
    by_category: dict[str, list[int]] | None = None,
) -> dict[str, float]:
    """recall_any@1/5/k over the scored questions; ``by_category`` (when given) collects
    category -> [hits@k, questions]."""
    sums = {"any@1": 0.0, "any@5": 0.0, f"any@{k}": 0.0}
    n = 0
    for conv in convs:
        for q in conv["questions"]:
            if q.get("adversarial") or not q.get("evidence"):
                continue
            ev = set(q["evidence"])
            hits = mem.search(q["question"], user=conv["conv_id"], k=k, recipe=recipe)
            ranked = [h.memory.metadata.get("turn", "") for h in hits]
            n += 1
            for cut in (1, 5, k):
                sums[f"any@{cut}"] += bool(set(ranked[:cut]) & ev)
            if by_category is not None:
                cell = by_category.setdefault(str(q.get("category", "?")), [0, 0])
                cell[0] += bool(set(ranked[:k]) & ev)
                cell[1] += 1
    return {name: v / n for name, v in sums.items()} | {"n": n}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--store-dir", default=None)
    ap.add_argument("--recipes", default="hybrid")
    ap.add_argument("--splits", default="turns,facts")
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--by-category", action="store_true", help="recall@k per question category")
    ap.add_argument("--reranker", default="none", help="none | minilm-ce")
    ap.add_argument("--embedder", default="local", help="local | bge-small (own store dir)")
    ap.add_argument(
        "--rename-speakers", action="store_true", help="questions name the speakers otherwise"
    )
    args = ap.parse_args()
    import tempfile

    base = Path(args.store_dir or tempfile.mkdtemp())
    base.mkdir(parents=True, exist_ok=True)
    for split in args.splits.split(","):
        data = FACTS if split == "facts" else DEFAULT_DATA
        mem, convs = open_split(
            # the renamed split stores what pinpoint stores, typos what turns stores
            base / f"{STORE_OF.get(split, split)}.db",
            data, split == "facts", args.reranker, args.embedder,
            split=split,
        )  # fmt: skip
        if args.rename_speakers:
            convs = renamed_questions(convs)
        for recipe in args.recipes.split(","):
            t = time.perf_counter()
            cats: dict[str, list[int]] = {}
            r = evaluate(mem, convs, recipe, args.k, cats if args.by_category else None)
            figures = " ".join(f"{n} {v:.3f}" for n, v in r.items() if n != "n")
            print(f"{split:5} {recipe:8} {figures}  ({r['n']} q, {time.perf_counter() - t:.0f}s)")
            for cat, (hit, total) in sorted(cats.items()):
                print(f"      {cat:12} {hit / total:.3f} ({total} q)")
        mem.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
