"""Context quality: does the evidence stand in the block the agent is given?

    python bench/context_bench.py [--store-dir DIR] [--splits turns,facts,messages,fillers]
        [--budgets 500,1000,2000] [--pack-k 60] [--limit N] [--json OUT]

The agent never sees ``search()``: it sees the block ``Memory.context(question, user=,
budget=)`` builds. For each scored LoCoMo dev question this asks for that block at each
budget and counts the question as *answered* when the text of one of its evidence turns
(whitespace collapsed) stands in it, as the held-out evaluation does. In the same run it
scores two baselines packed into the same budget, best first, one ``- text`` line per
hit, lines counted as memloci counts tokens (characters / 4):

* ``search packed``: memloci's own ``search()`` hits (``--pack-k`` of them);
* ``BM25 packed``: a plain bm25s index over the conversation's turns (stemmed,
  English stopwords).

It prints, per split and budget, the fraction answered, the tokens the block used on
average, and context latency (p50 / p95, the search inside included). Off-topic
questions (``bench/offtopic.py``) are asked too: the fraction of off-topic blocks that
hold a "Relevant …" section is printed beside the fraction of on-topic ones that do. And
how well scores separate: the fraction of off-topic questions with a search hit at or
above ``relevance_threshold``, and the fraction of real questions whose evidence, found
in the top ten, scores at or above it.

Stores are ingested once into ``--store-dir`` (default: a temporary folder) and
reused when the folder is given again, as ``quick_eval.py`` does: its stores and these
are the same files.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import DEFAULT_DATA, table
from memloci import Memory
from memloci.context import estimate_tokens, one_line
from offtopic import OFF_TOPIC
from quick_eval import FACTS, STORE_OF, open_split
from retrieval_bench import PlainBM25, scored


def evidence_texts(conv: dict[str, Any], question: dict[str, Any]) -> list[str]:
    """The texts of the question's evidence turns (every message of a turn cut into
    messages), whitespace collapsed."""
    wanted = set(question["evidence"])
    return [one_line(str(t.get("text") or "")) for t in conv["turns"] if t["id"] in wanted]


def holds(block: str, texts: list[str]) -> bool:
    flat = one_line(block)
    return any(t and t in flat for t in texts)


def packed(texts: list[str], budget: int) -> str:
    """``texts`` as ``- text`` lines, best first, while they fit in ``budget`` tokens."""
    lines: list[str] = []
    used = 0
    for text in texts:
        line = f"- {one_line(text)}\n"
        cost = estimate_tokens(line)
        if used + cost > budget:
            continue
        lines.append(line)
        used += cost
    return "".join(lines)


def pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run_split(
    mem: Memory,
    convs: list[dict[str, Any]],
    budgets: list[int],
    pack_k: int,
    limit: int | None,
) -> dict[str, Any]:
    bm25 = PlainBM25(convs)
    text_of = {c["conv_id"]: {t["id"]: str(t.get("text") or "") for t in c["turns"]} for c in convs}
    counts: dict[str, float] = {}
    tokens: dict[int, list[int]] = {b: [] for b in budgets}
    latency: dict[int, list[float]] = {b: [] for b in budgets}
    relevant_on = 0
    above = found_top = 0
    threshold = mem.service.settings.relevance_threshold
    n = 0
    for conv in convs:
        user = conv["conv_id"]
        questions = [q for q in conv["questions"] if scored(q)]
        for q in questions[:limit] if limit else questions:
            texts = evidence_texts(conv, q)
            hits = mem.search(q["question"], user=user, k=pack_k)
            found = [h.memory.content for h in hits]
            scored_ev = [h.score for h in hits[:10] if holds(h.memory.content, texts)]
            if scored_ev:
                found_top += 1
                above += max(scored_ev) >= threshold
            turn_ids = bm25.search(user, q["question"], pack_k)
            plain = [text_of[user][i] for i in turn_ids]
            n += 1
            for budget in budgets:
                started = time.perf_counter()
                block = mem.context(q["question"], user=user, budget=budget)
                latency[budget].append((time.perf_counter() - started) * 1000)
                tokens[budget].append(estimate_tokens(block))
                if budget == budgets[0] and "## Relevant" in block:
                    relevant_on += 1
                for name, text in (
                    ("context", block),
                    ("search packed", packed(found, budget)),
                    ("BM25 packed", packed(plain, budget)),
                ):
                    key = f"{name}@{budget}"
                    counts[key] = counts.get(key, 0) + holds(text, texts)
    return {
        "n": n,
        "answered": {key: v / max(n, 1) for key, v in counts.items()},
        "tokens": {b: statistics.fmean(v) if v else 0.0 for b, v in tokens.items()},
        "latency": {b: (pct(v, 0.5), pct(v, 0.95)) for b, v in latency.items()},
        "relevant_on": relevant_on / max(n, 1),
        "evidence_above": above / max(found_top, 1),
    }


def off_topic(mem: Memory, convs: list[dict[str, Any]], budget: int) -> tuple[float, float]:
    """Of the off-topic questions: the fraction whose block holds a "Relevant" section,
    and the fraction with a search hit at or above the relevance threshold."""
    threshold = mem.service.settings.relevance_threshold
    shown = above = asked = 0
    for conv in convs:
        for question in OFF_TOPIC:
            block = mem.context(question, user=conv["conv_id"], budget=budget)
            shown += "## Relevant" in block
            hits = mem.search(question, user=conv["conv_id"], k=10)
            above += any(h.score >= threshold for h in hits)
            asked += 1
    return shown / max(asked, 1), above / max(asked, 1)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--store-dir", default=None, help="ingested stores, kept between runs")
    ap.add_argument("--splits", default="turns,facts,messages,fillers")
    ap.add_argument("--budgets", default="500,1000,2000")
    ap.add_argument("--pack-k", type=int, default=60, help="search hits packed (baseline)")
    ap.add_argument("--limit", type=int, default=None, help="questions per conversation")
    ap.add_argument("--json", default=None, help="write the figures here too")
    args = ap.parse_args()
    budgets = [int(b) for b in args.budgets.split(",")]
    base = Path(args.store_dir or tempfile.mkdtemp(prefix="memloci-context-"))
    base.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {}
    for split in args.splits.split(","):
        data = FACTS if split == "facts" else DEFAULT_DATA
        started = time.perf_counter()
        mem, convs = open_split(
            base / f"{STORE_OF.get(split, split)}.db", data, split == "facts", split=split
        )
        ready = time.perf_counter() - started
        result = run_split(mem, convs, budgets, args.pack_k, args.limit)
        result["off_topic_relevant"], result["off_topic_above"] = off_topic(mem, convs, 1000)
        mem.close()
        results[split] = result
        rows = []
        for budget in budgets:
            p50, p95 = result["latency"][budget]
            rows.append(
                [
                    str(budget),
                    f"{result['answered'][f'context@{budget}']:.3f}",
                    f"{result['answered'][f'search packed@{budget}']:.3f}",
                    f"{result['answered'][f'BM25 packed@{budget}']:.3f}",
                    f"{result['tokens'][budget]:.0f}",
                    f"{p50:.1f} / {p95:.1f}",
                ]
            )
        print(
            f"\n[{split}] {result['n']} questions (store ready in {ready:.0f} s); "
            f"'Relevant' section in {result['relevant_on']:.3f} of on-topic blocks, "
            f"{result['off_topic_relevant']:.3f} of off-topic ones (1,000 tokens)\n"
            f"scores: a hit >= {mem.service.settings.relevance_threshold} for "
            f"{result['off_topic_above']:.3f} of off-topic questions; evidence found in the "
            f"top 10 scores >= it for {result['evidence_above']:.3f} of questions"
        )
        header = [
            "budget",
            "context",
            "search packed",
            "BM25 packed",
            "tokens used",
            "p50 / p95 ms",
        ]
        print(table(rows, header))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2, default=str), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
