"""Retrieval quality on LoCoMo-style data: memloci (with and without its graph
strategies) vs BM25-only vs dense-only, same run, on DEV splits — conversation turns,
fact memory, short messages and short messages whose speakers are labelled by role —
plus a "first query" table of small-store probes.

    python bench/retrieval_bench.py [--data FILE] [--facts FILE] [--k 10] [--json OUT]
        [--splits turns,facts,messages,roles,roleq,fullnames,handles,fillers,chatspeak,
                  shortnames,misspelt,lowerlabels,relabelled,pinpoint,renamed,typos,first]

Turns: each conversation's turns are added with their session date as ``event_time``
(user = conversation id, session = session id). Facts: each fact is stored the way an
agent stores one, ``remember(text, subject=speaker, event_time=date)``. Messages: the
turns cut into their sentences, one message each (``common.as_messages``; a stand-in for
real chats of short messages). Roles: the same messages with the speakers labelled
``user`` and ``assistant`` instead of their names (``common.with_roles``), the questions
still naming them — a chat export that labels people by role or handle; roleq: those
asked about as "the user" / "the assistant" (``common.with_role_questions``), as an agent
asks. Full names: the
messages with each speaker labelled by a full name ("Caroline Okafor",
``common.with_full_names``), the questions using the first. Handles: labelled by a
user name that begins with the first name ("caroline17", ``common.with_handles``). Fillers:
the messages with a filler ("lol", "ok", an emoji) after about 30 % of them, never evidence
(``common.with_fillers``), as real chats have them. Chat speak: the messages typed as
people type in a chat — words shortened ("bday", "tmrw", "u") and half of them in lower
case without their full stop (``common.with_chat_speak``). Short names: the messages
asked about by a shortened form of the speakers' names, "Caro" for "Caroline"
(``common.with_short_names``). Misspelt: asked about with the names misspelt,
"Carroline", "Melania" (``common.with_misspelt_names``). Lower-case labels: the speakers
labelled by their names typed in lower case, "caroline" (``common.with_lowercase_labels``).
Relabelled: by the first name in the first half of the sessions, by a full name in the
rest, "Caroline" then "Caroline Okafor" (``common.with_relabelling``). Pinpoint: the
messages scored by the message that holds the answer (a word of it), not by any message
of its turn, as a real chat's evidence names one message (``common.with_message_evidence``).
Renamed: pinpoint with the questions calling the speakers by names no memory holds,
"Robin" for Caroline (``common.renamed_questions``), as a real chat's questions may.
Typos: the turns asked with a typo in one word of each question, "resaerch" for
"research" (``common.with_typos``), as people type in a hurry.
Every scored
question is asked with each recipe and scored by evidence ids. The query embedding is timed on
its own; the recipes are then timed with it cached, so ``hybrid`` − ``core`` is
what the graph strategies cost.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import secrets
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from common import (
    DEFAULT_DATA,
    chat_split,
    data_path,
    ingest_turn,
    load_conversations,
    settle,
    table,
    turn_text,
)
from first_probes import FIRST
from memloci import Memory
from memloci.retrieval.graph import meaning_query

RECIPES = ("hybrid", "core", "fulltext", "vector", "bm25")
GRAPH = ("entity", "time", "temporal", "causal")
LABELS = {
    "hybrid": "memloci (hybrid)",
    "core": "memloci core (no graph)",
    "fulltext": "memloci full text only",
    "vector": "dense only (baseline)",
    "bm25": "BM25 (baseline)",
}
BASELINES = ("bm25", "vector")


class PlainBM25:
    """The textbook baseline: bm25s over each turn's own text, English stopwords and the
    Snowball English stemmer."""

    def __init__(self, convs: list[dict[str, Any]]) -> None:
        import bm25s
        import Stemmer

        self.stemmer = Stemmer.Stemmer("english")

        self.index: dict[str, tuple[Any, list[str]]] = {}
        for conv in convs:
            ids = [t["id"] for t in conv["turns"]]
            retriever = bm25s.BM25()
            corpus = [turn_text(t) for t in conv["turns"]]
            tokens = bm25s.tokenize(
                corpus, stopwords="en", stemmer=self.stemmer, return_ids=False, show_progress=False
            )
            retriever.index(tokens, show_progress=False)
            self.index[conv["conv_id"]] = (retriever, ids)

    def search(self, conv_id: str, question: str, k: int) -> list[str]:
        import bm25s

        retriever, ids = self.index[conv_id]
        tokens = bm25s.tokenize(
            [question], stopwords="en", stemmer=self.stemmer, return_ids=False, show_progress=False
        )
        docs, scores = retriever.retrieve(tokens, k=min(k, len(ids)), show_progress=False)
        return [ids[int(d)] for d, s in zip(docs[0], scores[0], strict=True) if s > 0]


def scored(question: dict[str, Any]) -> bool:
    return not question.get("adversarial") and bool(question.get("evidence"))


def ingest(mem: Memory, conv: dict[str, Any], facts: bool = False) -> None:
    for turn in conv["turns"]:
        ingest_turn(mem, conv, turn, facts)


def metrics(ranked: list[str], evidence: set[str], k: int) -> dict[str, float]:
    out: dict[str, float] = {}
    for cut in (1, 5, k):
        top = set(ranked[:cut])
        out[f"any@{cut}"] = float(bool(top & evidence))
        out[f"all@{cut}"] = float(evidence <= top)
    # an evidence id counts once (in the messages split a turn's sentences share its id)
    first = {t: i for i, t in reversed(list(enumerate(ranked[:10])))}
    dcg = sum(1 / math.log2(i + 2) for t, i in first.items() if t in evidence)
    idcg = sum(1 / math.log2(i + 2) for i in range(min(len(evidence), 10)))
    out["ndcg@10"] = dcg / idcg if idcg else 0.0
    return out


@contextlib.contextmanager
def bench_store(url: str | None, tmp: str) -> Iterator[str]:
    """A temporary SQLite file, or a fresh schema on the PostgreSQL server at ``url``."""
    if not url:
        yield str(Path(tmp) / "bench.db")
        return
    import psycopg

    schema = f"memloci_bench_{secrets.token_hex(4)}"
    try:
        yield f"{url}{'&' if '?' in url else '?'}schema={schema}"
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--data", help="JSONL file (default: ../shared/data/locomo_dev.jsonl)")
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--embedder", default="local")
    ap.add_argument("--json", help="write per-recipe figures here")
    ap.add_argument("--limit-convs", type=int, default=0)
    ap.add_argument(
        "--facts", help="fact-memory JSONL (default: ../shared/data/locomo_facts_dev.jsonl)"
    )
    ap.add_argument(
        "--splits",
        default="turns,facts,messages,roles,roleq,fullnames,handles,fillers,chatspeak,"
        "shortnames,misspelt,lowerlabels,relabelled,pinpoint,renamed,typos,first",
        help="which tables to run",
    )
    ap.add_argument(
        "--store",
        help="a postgresql:// URL: run the turn/fact splits on PostgreSQL (a fresh schema"
        " per split, dropped afterwards) instead of a temporary SQLite file",
    )
    args = ap.parse_args()
    out: dict[str, Any] = {}
    for split in args.splits.split(","):
        if split == "first":
            first_queries(args.embedder)
            continue
        facts = split == "facts"
        default = DEFAULT_DATA.with_name("locomo_facts_dev.jsonl") if facts else None
        path = data_path((args.facts or str(default)) if facts else args.data)
        convs = load_conversations(path)
        convs = chat_split(convs, split)
        if args.limit_convs:
            convs = convs[: args.limit_convs]
        out[split] = run_split(split, convs, args, facts)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
    return 0


def run_split(
    split: str, convs: list[dict[str, Any]], args: argparse.Namespace, facts: bool
) -> dict[str, dict[str, float]]:
    with tempfile.TemporaryDirectory() as tmp, bench_store(args.store, tmp) as location:
        mem = Memory(location, embedder=args.embedder, reinforce_on_search=False)
        t0 = time.perf_counter()
        for conv in convs:
            ingest(mem, conv, facts)
        settle(mem)
        ingest_s = time.perf_counter() - t0
        turns = sum(len(c["turns"]) for c in convs)
        plain = PlainBM25(convs)
        sums: dict[str, dict[str, dict[str, float]]] = {
            r: defaultdict(lambda: defaultdict(float)) for r in RECIPES
        }
        counts: dict[str, int] = defaultdict(int)
        latency: dict[str, list[float]] = defaultdict(list)
        graph_used: dict[str, int] = defaultdict(int)
        intents: dict[str, int] = defaultdict(int)
        embedder = mem.service.embedder
        entities = mem.service.store.entities.count_entities("default")
        for conv in convs:
            for q in conv["questions"]:
                if not scored(q):
                    continue
                cat = q.get("category", "?")
                counts[cat] += 1
                counts["overall"] += 1
                evidence = set(q["evidence"])
                if embedder is not None:
                    t = time.perf_counter()
                    embedder.embed_query(q["question"])  # timed alone; cached for the recipes
                    latency["embed"].append(time.perf_counter() - t)
                    # hybrid embeds the named people as pronouns: cache that form too
                    named = mem.service.store.graph.entities_in_text(("default",), q["question"])
                    embedder.embed_query(meaning_query(q["question"], named))
                plan = mem.service.retriever.plan(q["question"])
                intents[f"{plan.intent.value}/{plan.complexity}"] += 1
                for recipe in RECIPES:
                    t = time.perf_counter()
                    if recipe == "bm25":
                        ranked = plain.search(conv["conv_id"], q["question"], args.k)
                    else:
                        hits = mem.search(
                            q["question"], user=conv["conv_id"], k=args.k, recipe=recipe
                        )
                        ranked = [h.memory.metadata.get("turn", "") for h in hits]
                        if recipe == "hybrid":
                            for name in GRAPH:
                                graph_used[name] += any(name in h.strategies for h in hits)
                    latency[recipe].append(time.perf_counter() - t)
                    for name, value in metrics(ranked, evidence, args.k).items():
                        sums[recipe][cat][name] += value
                        sums[recipe]["overall"][name] += value
        mem.close()
    k = args.k
    cols = ["any@1", "any@5", f"any@{k}", "all@1", "all@5", f"all@{k}", "ndcg@10"]
    rows = []
    for recipe in RECIPES:
        lat = sorted(latency[recipe])
        p50 = lat[len(lat) // 2] * 1000 if lat else 0.0
        figures = [sums[recipe]["overall"][c] / counts["overall"] for c in cols]
        rows.append([LABELS[recipe], *(f"{x:.3f}" for x in figures), f"{p50:.1f}"])
    kind = "facts (remember)" if facts else f"{split} (add)"
    print(
        f"\n[{split}] LoCoMo evidence retrieval, {kind} — {len(convs)} conversations, "
        f"{turns} memories, "
        f"{counts['overall']} scored questions; ingest+embed {ingest_s:.1f}s "
        f"({turns / ingest_s:.0f} turns/s); {entities} entities linked by the worker\n"
    )
    print(table(rows, ["system", *cols, "p50 ms"]))
    embed = sorted(latency["embed"])
    if embed:
        ms = embed[len(embed) // 2] * 1000
        print(
            f"\np50 columns exclude the query embedding (p50 {ms:.1f} ms, timed alone first):"
            " add it for a cold query of hybrid, core or dense."
        )
    cats = sorted(c for c in counts if c != "overall")
    crow = []
    for cat in cats:
        crow.append(
            [f"{cat} ({counts[cat]})"]
            + [f"{sums[r][cat][f'any@{k}'] / counts[cat]:.3f}" for r in RECIPES]
        )
    print(f"\nrecall@{k} (any) by category\n")
    print(table(crow, ["category", *(LABELS[r] for r in RECIPES)]))
    n = counts["overall"]
    print(
        "\nintents: "
        + ", ".join(f"{name} {c}" for name, c in sorted(intents.items(), key=lambda x: -x[1]))
    )
    print(
        "graph strategies among the hybrid top 10: "
        + ", ".join(f"{name} {graph_used[name]}/{n}" for name in GRAPH)
    )
    base = max(sums[r]["overall"][f"any@{k}"] for r in BASELINES)
    ours = sums["hybrid"]["overall"][f"any@{k}"]
    core = sums["core"]["overall"][f"any@{k}"]
    print(
        f"\nmemloci / best baseline recall@{k}: {ours / base:.3f}x;"
        f" hybrid / core (graph on / off): {ours / core:.3f}x"
    )
    return {r: {c: sums[r]["overall"][c] / counts["overall"] for c in cols} for r in RECIPES}


def first_queries(embedder: str) -> None:
    """Small stores, first queries: the rank of the answering memory per recipe."""
    recipes = ("hybrid", "fulltext", "vector")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        mem = Memory(str(Path(tmp) / "first.db"), embedder=embedder, reinforce_on_search=False)
        for n, (name, memories, query, answer) in enumerate(FIRST):
            ns = f"probe{n}"
            for kind, text, who in memories:
                if kind == "remember":
                    mem.remember(text, user="u1", subject=who, namespace=ns)
                else:
                    mem.add(text, user="u1", session="s1", speaker=who, namespace=ns)
            mem.flush()
            cells = [name, query]
            for recipe in recipes:
                hits = mem.search(query, user="u1", namespace=ns, k=10, recipe=recipe)
                found = [h.memory.content for h in hits]
                rank = found.index(answer) + 1 if answer in found else None
                score = f" ({hits[rank - 1].score:.2f})" if rank and recipe == "hybrid" else ""
                cells.append(f"#{rank}{score}" if rank else "-")
            rows.append(cells)
        mem.close()
    print("\n[first] first query on a small store: rank of the answering memory (hybrid score)\n")
    print(table(rows, ["probe", "query", *(LABELS[r] for r in recipes)]))
    firsts = [sum(row[2 + i].startswith("#1 ") or row[2 + i] == "#1" for row in rows) for i in
              range(len(recipes))]  # fmt: skip
    print(
        "answered first: "
        + ", ".join(f"{LABELS[r]} {n}/{len(rows)}" for r, n in zip(recipes, firsts, strict=True))
    )


if __name__ == "__main__":
    sys.exit(main())
