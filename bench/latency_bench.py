"""Latency, throughput and memory of the SDK on this machine (meant for 2 CPU cores).

    python bench/latency_bench.py [--sizes 10000,100000] [--queries 200] [--json OUT] [--quick]
                                  [--analyze] [--keep DIR]

Per size N, in one fresh SQLite database (temp dir):

* build: N synthetic conversation turns (templates + random names, places, topics,
  dates; N/20 sessions of 20 turns over 50 users; deterministic per --seed), added with
  ``Memory.add(list_of_messages, user=…, session=…)`` (one transaction per session), then
  embedded by the background worker. To keep the build short, turn texts come from a pool
  of --pool distinct sentences embedded once with the real local model; a PoolEmbedder
  (same model id and dimension) returns the pool vector of a turn's sentence (the
  ``speaker:`` prefix the worker adds is not embedded) and runs the real model for
  anything else. Query embeddings and the ingest test below always use the real model.
* cold start: the store is closed and reopened; the first search loads the vector cache.
* hot-path add: 500 single ``Memory.add(turn, user=…, session=…)`` on the populated store
  (temporal edge + FTS update); fresh texts, so the worker embeds them meanwhile.
* search: ``Memory.search(question, user=…, k=10)`` over --queries distinct questions,
  query embedding included (no cache hits); also ``recipe="fulltext"`` and
  ``recipe="vector"``; then hybrid search split into its stages, timed one by one
  (interleaved with whole ``Retriever.search`` calls on other fresh questions).
* context: ``Memory.context(prompt, user=…, budget=1000)`` over distinct prompts.
* ingest: 1,000 fresh turns (not in the pool: real embeddings) until ``flush()`` returns.
* baseline: a raw pysqlite3 single-row INSERT + COMMIT into a plain WAL table, same disk.
* memory: peak RSS (ru_maxrss, process-wide, so sizes are run smallest first).
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import os
import platform
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pysqlite3.dbapi2 as sqlite3

from common import ROOT, table
from memloci import Memory
from memloci.providers.base import Embedder, load_embedder
from memloci.retrieval.fusion import fuse_lists
from memloci.retrieval.graph import anchored, walks
from memloci.retrieval.incontext import meaning_in_context
from memloci.retrieval.query import key_form
from memloci.words import terms

F32 = npt.NDArray[np.float32]
TURNS_PER_SESSION = 20
USERS = 50
HOT_ADDS = 500
INGEST_TURNS = 1000
SPLIT_QUERIES = 100  # the stage-by-stage split runs each query three times


# ---------------------------------------------------------------------- synthetic text
def _items(text: str, sep: str = "|") -> tuple[str, ...]:
    return tuple(text.split(sep))


NAMES = _items(
    "Alice Bruno Chloe Daniel Elena Farid Grace Hiro Ines Jonas Kira Liam Maya Nadia Omar "
    "Priya Quentin Rosa Samir Tara Umar Vera Wes Ximena Yusuf Zoe Aaron Bianca Carlos Dana "
    "Emeka Fiona Gustavo Hana Ivan Julia Kofi Lena Mateo Nora Oscar Paula Rafael Sofia Theo "
    "Uma Victor Wanda Yara Zack Amara Ben Clara Diego Esther Felix Gemma Hugo Isla Jamal "
    "Keiko Leo Mila Nico Olga Pedro Ruth Sven Tomas Ulla Vikram Willa Xavier Yuki Zainab",
    " ",
)
PLACES = _items(
    "Lisbon|Kyoto|the Rockies|Marrakech|Reykjavik|Cape Town|Vancouver|Oaxaca|Edinburgh|"
    "the Amalfi coast|Hanoi|Patagonia|Prague|Lake Tahoe|Seoul|the Scottish Highlands|"
    "Buenos Aires|Tasmania|Crete|Montreal|the Black Forest|Istanbul|Yosemite|Copenhagen|"
    "Bali|Santorini|Nairobi|Banff|Tbilisi|Porto|Zanzibar|the Dolomites|Chiang Mai|Galway|"
    "Valparaiso|Ljubljana|the farmers market|the climbing gym|the community garden|"
    "my grandmother's village|the old bookstore downtown|the animal shelter|the beach house|"
    "the jazz club on Fifth Street|the pottery studio|the night market|the hospital"
)
TOPICS = _items(
    "pottery|rock climbing|sourdough baking|birdwatching|salsa dancing|oil painting|"
    "marathon training|woodworking|astronomy|beekeeping|chess|urban sketching|kayaking|"
    "film photography|learning Japanese|composting|stand-up comedy|knitting|vinyl records|"
    "volunteering at the shelter|adopting a dog|playing the cello|restoring old bikes|"
    "writing a novel|yoga|meditation|calligraphy|scuba diving|community theatre|"
    "coding bootcamps|mental health advocacy|LGBTQ support groups|gardening|"
    "homebrewing kombucha|trail running|camping|origami|board games|songwriting"
)
FOODS = _items(
    "ramen|tacos al pastor|dim sum|pho|jollof rice|shakshuka|pierogi|paella|bibimbap|"
    "falafel|lemon tart|banana bread|sushi|goulash|tiramisu|butter chicken|empanadas|"
    "mushroom risotto|key lime pie|baklava|churros|pad thai|moussaka|clam chowder"
)
ACTIVITIES = _items(
    "hiking up to the waterfall|painting the sunset|swimming in the lake|reading by the fire|"
    "cooking for the whole family|exploring the old town|taking photos of street art|"
    "camping under the stars|cycling along the river|dancing until midnight|"
    "volunteering at the food bank|fixing up the garden shed|playing board games|"
    "watching the meteor shower|teaching the kids to skate|baking cookies for the neighbours|"
    "practising the guitar|walking the dogs on the beach|visiting art galleries|"
    "tasting local wines|building a treehouse|sorting through old letters"
)
OBJECTS = _items(
    "a vintage camera|a secondhand piano|a bright red kayak|a handmade quilt|a telescope|"
    "a new road bike|a pottery wheel|a signed first edition|a sketchbook|a rescue kitten|"
    "a tiny bonsai tree|an old typewriter|a pair of hiking boots|a wooden chess set|"
    "a ukulele|a sewing machine|a houseplant collection|a drone|a leather journal|"
    "a set of watercolours|a record player|a hammock|an espresso machine"
)
FEELINGS = _items(
    "thrilled|exhausted|nervous|proud|overwhelmed|grateful|relieved|curious|inspired|"
    "homesick|anxious|ecstatic|calm|frustrated|hopeful|nostalgic|motivated|heartbroken"
)
PETS = _items("dog|puppy|cat|parrot|rabbit|hamster|turtle|guinea pig|goldfish|horse|gecko")
JOBS = _items(
    "nurse|software engineer|teacher|graphic designer|chef|counsellor|architect|"
    "photographer|lawyer|physiotherapist|journalist|pharmacist|marine biologist|"
    "social worker|electrician|librarian|veterinarian|data analyst|firefighter"
)
EVENTS = _items(
    "my cousin's wedding|the charity run|the school reunion|the pride parade|"
    "the music festival|my sister's graduation|the art fair|the book club meeting|"
    "the adoption interview|the job interview|the team offsite|the family barbecue|"
    "the open mic night|the science fair|the conference in Berlin|the baby shower|"
    "the hackathon|the support group meeting|the farmers' market opening"
)
WHEN = _items(
    "last weekend|yesterday|last Tuesday|two weeks ago|over the holidays|on my birthday|"
    "back in 2019|this morning|last summer|in early March|on Saturday night|last month|"
    "after work on Friday|during spring break|on 14 May|in late October|a few days ago|"
    "on New Year's Eve|the week before last|on 3 July"
)
BOOKS = _items(
    "Becoming|The Midnight Library|Sapiens|Educated|Circe|Dune|The Overstory|"
    "Klara and the Sun|Where the Crawdads Sing|Atomic Habits|The Body Keeps the Score|"
    "Project Hail Mary|Pachinko|The Alchemist|Little Women|Normal People"
)

TEMPLATES = (
    "I finally went to {place} {when} with {name}, and we spent the whole day {activity}.",
    "{name} told me she started {topic} {when}, and honestly I'm {feeling} for her.",
    "Have you ever tried the {food} at that little place near {place}? It's unreal.",
    "I've been getting into {topic} lately; it helps me unwind after long shifts as a {job}.",
    "My {pet} knocked over {object} {when}, so that was a fun morning.",
    "We're planning a trip to {place} next spring, mostly for {topic} and good {food}.",
    "I felt so {feeling} at {event} {when}, but {name} made me laugh the entire time.",
    "Reading {book} right now; it changed how I think about {topic}.",
    "I bought {object} {when} and I can't stop {activity}.",
    "{name} is a {job} now and just moved to {place}, which is wild.",
    "Thanks for asking! {event} went better than expected and I felt {feeling}.",
    "I made {food} for {name} {when} and it was a disaster, but we ate it anyway.",
    "Honestly {topic} has been my therapy since the move to {place}.",
    "Do you still go {activity}? I miss doing that with you and {name}.",
    "Guess what, I signed up for {topic} classes at {place}!",
    "My kids were {feeling} when we adopted a {pet} {when}.",
    "I'm {feeling} about the new job as a {job}; the interview was {when}.",
    "{name} recommended {book} and I read it in two nights.",
    "We celebrated {event} at {place} and ate way too much {food}.",
    "The best part of {place} was {activity} with {name}.",
    "I'm thinking of giving {name} {object} for her birthday; she loves {topic}.",
    "It's been {number} years since I first tried {topic}, can you believe it?",
    "I ran into {name} at {place} {when}; she's still obsessed with {topic}.",
    "After {event}, I realised how much {topic} means to me.",
    "My {pet} is named after a character from {book}.",
    "I volunteered at {place} {when} and met a {job} who does {topic} on weekends.",
    "I've saved up for {object}, it's been a goal for {number} months.",
    "We got caught in the rain {when} while {activity}, and I loved it.",
    "The {food} in {place} is still the best thing I've ever eaten.",
    "I've been painting a picture of {place} for {name}; it's almost done.",
    "{name} and I are running {event} together to raise money for the shelter.",
    "Being a {job} is exhausting, so {topic} keeps me sane.",
    "Can you recommend a good book about {topic}? I just finished {book}.",
    "I'm so {feeling} — {name} finally said yes to the trip to {place}!",
    "My therapist suggested {topic}, and I started it {when}.",
    "We found {object} at a flea market in {place} for {number} dollars.",
    "I took my {pet} to {place} {when} and she loved {activity}.",
    "The kids want to learn {topic} after seeing it at {event}.",
    "Last time I saw {name} was at {event}; she looked so {feeling}.",
    "I'm hosting a {food} night on Friday; {name} is bringing dessert.",
)
SHORT_REPLIES = _items(
    "That sounds amazing!|Haha, so true.|Wow, good for you!|I'm so proud of you.|Super good!|"
    "Aww, that's adorable.|No way! Tell me more.|That's tough, hang in there.|Totally agree.|"
    "Sounds like a plan!|Thanks, that means a lot.|Oh nice, pics please!|Same here, honestly.|"
    "Congrats!!|Ugh, I know the feeling.|Let's do it."
)
QUESTIONS = (
    "When did {name} go to {place}?",
    "What did {name} say about {topic}?",
    "Which {food} place near {place} was recommended?",
    "How does {name} feel about {activity}?",
    "Has {name} ever tried {topic} before?",
    "What book about {topic} was {name} reading?",
    "Who went to {event} with {name}?",
    "Why was {name} {feeling} after {event}?",
    "What gift is {name} planning to buy that relates to {topic}?",
    "What kind of {pet} does {name} have?",
    "Where did {name} move after becoming a {job}?",
    "What happened to {object} {when}?",
    "Did {name} enjoy the trip to {place}?",
    "What does {name} do to relax after work as a {job}?",
    "When did {name} start {topic}?",
    "What did {name} cook for dinner {when}?",
)
CONTEXT_PROMPTS = (
    "Help me plan a weekend in {place} for {name}.",
    "Remind me what {name} said about {topic} last time.",
    "I want to surprise {name} with {object}; any thoughts?",
    "Suggest a {food} recipe I could make for {name}.",
    "Write a short note to {name} about {event}.",
    "What should I pack for {activity} in {place}?",
)


def _fill(rng: random.Random, template: str) -> str:
    return template.format(
        name=rng.choice(NAMES),
        place=rng.choice(PLACES),
        topic=rng.choice(TOPICS),
        food=rng.choice(FOODS),
        activity=rng.choice(ACTIVITIES),
        object=rng.choice(OBJECTS),
        feeling=rng.choice(FEELINGS),
        pet=rng.choice(PETS),
        job=rng.choice(JOBS),
        event=rng.choice(EVENTS),
        when=rng.choice(WHEN),
        book=rng.choice(BOOKS),
        number=rng.randint(2, 40),
    )


def unique_texts(
    rng: random.Random, templates: Sequence[str], count: int, avoid: set[str] | frozenset[str]
) -> list[str]:
    """``count`` distinct filled templates, none of them in ``avoid``."""
    out: list[str] = []
    seen = set(avoid)
    while len(out) < count:
        text = _fill(rng, rng.choice(templates))
        if text not in seen:
            seen.add(text)
            out.append(text)
    return out


def sentence_pool(seed: int, size: int) -> list[str]:
    """The distinct sentences every built turn is drawn from (about 1 in 8 a short reply)."""
    rng = random.Random(seed)
    shorts = list(SHORT_REPLIES)
    return shorts + unique_texts(rng, TEMPLATES, size - len(shorts), frozenset(shorts))


def sessions(n: int, pool: list[str], seed: int) -> list[dict[str, Any]]:
    """N/20 sessions of 20 alternating turns, each owned by one of 50 users."""
    rng = random.Random(seed + 1)
    people = [(NAMES[i % len(NAMES)], [rng.choice(NAMES) for _ in range(3)]) for i in range(USERS)]
    start = datetime(2022, 1, 1, tzinfo=UTC)
    out = []
    for s in range(max(1, n // TURNS_PER_SESSION)):
        u = rng.randrange(USERS)
        persona, friends = people[u]
        friend = rng.choice(friends)
        when = start + timedelta(days=rng.uniform(0, 900), hours=rng.uniform(8, 22))
        turns = []
        for t in range(TURNS_PER_SESSION):
            short = rng.random() < 0.12
            text = rng.choice(SHORT_REPLIES) if short else pool[rng.randrange(len(pool))]
            turns.append(
                {"role": "user", "name": persona if t % 2 == 0 else friend, "content": text}
            )
        out.append(
            {
                "user": f"user-{u:02d}",
                "session": f"s{s:06d}",
                "when": when,
                "turns": turns,
                "persona": persona,
            }
        )
    return out


# ---------------------------------------------------------------------- embedder
class PoolEmbedder:
    """The local model with precomputed vectors for the build pool (see the docstring)."""

    def __init__(self, real: Embedder, pool: dict[str, F32]) -> None:
        self.real = real
        self.pool = pool
        self.pool_hits = 0
        self.real_embedded = 0

    @property
    def model_id(self) -> str:
        return self.real.model_id

    @property
    def dimension(self) -> int:
        return self.real.dimension

    def _lookup(self, text: str) -> F32 | None:
        vec = self.pool.get(text)
        if vec is None and ": " in text:
            vec = self.pool.get(text.split(": ", 1)[1])
        return vec

    def embed(self, texts: Sequence[str]) -> F32:
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        misses = []
        for i, text in enumerate(texts):
            vec = self._lookup(text)
            if vec is None:
                misses.append(i)
            else:
                out[i] = vec
        if misses:
            out[misses] = self.real.embed([texts[i] for i in misses])
        self.pool_hits += len(texts) - len(misses)
        self.real_embedded += len(misses)
        return out

    def embed_query(self, text: str) -> F32:
        return self.real.embed_query(text)


# ---------------------------------------------------------------------- helpers
def percentile(values: Sequence[float], pct: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(pct / 100 * (len(ordered) - 1))))
    return ordered[index]


def summary(ms: Sequence[float]) -> dict[str, float]:
    return {
        "p50": statistics.median(ms),
        "p95": percentile(ms, 95),
        "p99": percentile(ms, 99),
        "mean": statistics.fmean(ms),
    }


def timed(fn: Callable[[], Any]) -> float:
    """Milliseconds one call takes."""
    t = time.perf_counter()
    fn()
    return (time.perf_counter() - t) * 1000


def rss_mb() -> tuple[float, float]:
    """(current RSS, peak RSS) in MiB."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    try:
        with open("/proc/self/statm") as fh:
            pages = int(fh.read().split()[1])
        now = pages * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError):
        now = float("nan")
    return now, peak


def code_version() -> str:
    """The checked-out commit (and whether src/ has local edits), for the record."""
    try:
        head = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(ROOT), "status", "--porcelain", "--", "src"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "(not a git checkout)"
    return f"commit {head}" + (" + uncommitted changes in src/" if dirty else "")


def raw_insert_baseline(folder: Path, count: int) -> list[float]:
    """Single-row INSERT + COMMIT into a plain WAL table (synchronous=NORMAL, like memloci)."""
    conn = sqlite3.connect(str(folder / "raw.db"), isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, session TEXT, content TEXT)")
    rng = random.Random(7)
    out = []
    for i in range(count):
        text = _fill(rng, rng.choice(TEMPLATES))
        t = time.perf_counter()
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO t (session, content) VALUES (?, ?)", (f"s{i % 50}", text))
        conn.execute("COMMIT")
        out.append((time.perf_counter() - t) * 1000)
    conn.close()
    return out


# ---------------------------------------------------------------------- one size
def run_size(
    n: int, args: argparse.Namespace, pool: list[str], emb: PoolEmbedder, folder: Path
) -> dict[str, Any]:
    res: dict[str, Any] = {"size": n, "load_start": os.getloadavg()[0], "analyzed": args.analyze}
    convs = sessions(n, pool, args.seed)
    users = sorted({c["user"] for c in convs})
    rng = random.Random(args.seed + n)
    used = set(pool)
    questions = unique_texts(rng, QUESTIONS, 4 * args.queries + 20, used)
    warm, qs = questions[:20], questions[20:]
    q_hybrid, q_vector, q_split = (qs[i * args.queries : (i + 1) * args.queries] for i in range(3))
    prompts = unique_texts(rng, CONTEXT_PROMPTS, args.queries, used)
    fresh = unique_texts(rng, TEMPLATES, HOT_ADDS + INGEST_TURNS, used | set(questions))

    # -- build --------------------------------------------------------------------
    path = folder / f"latency-{n}.db"
    mem = Memory(str(path), embedder=emb)
    t0 = time.perf_counter()
    for c in convs:
        mem.add(c["turns"], user=c["user"], session=c["session"], event_time=c["when"])
    insert_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    mem.flush()
    embed_s = time.perf_counter() - t1
    total = sum(len(c["turns"]) for c in convs)
    res["build"] = {
        "turns": total,
        "insert_s": insert_s,
        "embed_s": embed_s,
        "insert_turns_per_s": total / insert_s,
    }
    res["db_mb"] = sum(p.stat().st_size for p in folder.glob(f"latency-{n}.db*")) / 2**20
    print(
        f"  built {total} turns: add() calls {insert_s:.1f}s, flush() waited {embed_s:.1f}s more",
        flush=True,
    )
    mem.close()
    if args.analyze:  # what-if: full planner statistics (memloci runs PRAGMA optimize)
        conn = sqlite3.connect(str(path), isolation_level=None)
        conn.execute("ANALYZE")
        conn.close()

    # -- reopen: cold start ------------------------------------------------------------
    t0 = time.perf_counter()
    mem = Memory(str(path), embedder=emb)
    res["open_ms"] = (time.perf_counter() - t0) * 1000
    res["first_search_ms"] = timed(lambda: mem.search(warm[0], user=users[0], k=10))
    for i, q in enumerate(warm[1:]):  # page cache, first-call costs
        mem.search(q, user=users[i % len(users)], k=10)
    mem.flush()  # let the worker apply the warm-up searches' access counts

    # -- (a) hot-path add ----------------------------------------------------------
    add_ms = []
    for i in range(HOT_ADDS):
        c = convs[rng.randrange(len(convs))]
        text = fresh[i]
        add_ms.append(
            timed(
                lambda c=c, text=text: mem.add(
                    text, user=c["user"], session=c["session"], speaker=c["persona"]
                )
            )
        )
    res["add_ms"] = summary(add_ms)
    mem.flush()

    # -- (b) search ------------------------------------------------------------------
    def search_ms(questions: list[str], recipe: str) -> list[float]:
        out = []
        for i, q in enumerate(questions):
            user = users[i % len(users)]
            out.append(timed(lambda q=q, user=user: mem.search(q, user=user, k=10, recipe=recipe)))
        return out

    mem.flush()
    res["search_hybrid_ms"] = summary(search_ms(q_hybrid, "hybrid"))
    res["search_fulltext_ms"] = summary(search_ms(q_hybrid, "fulltext"))
    res["search_vector_ms"] = summary(search_ms(q_vector, "vector"))
    half = min(SPLIT_QUERIES, len(q_split) // 2)
    res["split_queries"] = half
    res["split_ms"] = search_split(mem, q_split[:half], q_split[half : 2 * half], users)

    # -- (c) context -----------------------------------------------------------------
    ctx_ms = []
    for i, p in enumerate(prompts):
        user = users[i % len(users)]
        ctx_ms.append(timed(lambda p=p, user=user: mem.context(p, user=user, budget=1000)))
    res["context_ms"] = summary(ctx_ms)

    # -- (d) ingest with real embeddings -------------------------------------------------
    mem.flush()
    before = emb.real_embedded
    batch = fresh[HOT_ADDS:]
    t0 = time.perf_counter()
    for j in range(0, len(batch), TURNS_PER_SESSION):
        c = convs[rng.randrange(len(convs))]
        msgs = [
            {"role": "user", "name": c["persona"], "content": x}
            for x in batch[j : j + TURNS_PER_SESSION]
        ]
        mem.add(msgs, user=c["user"], session=f"ingest-{n}-{j}", event_time=c["when"])
    mem.flush()
    ingest_s = time.perf_counter() - t0
    res["ingest"] = {
        "turns": len(batch),
        "seconds": ingest_s,
        "turns_per_s": len(batch) / ingest_s,
        "real_embeddings": emb.real_embedded - before,
    }
    mem.close()

    # -- (e) memory, baseline -----------------------------------------------------------
    res["rss_mb"], res["peak_rss_mb"] = rss_mb()
    res["load_end"] = os.getloadavg()[0]
    res["raw_insert_ms"] = summary(raw_insert_baseline(folder, HOT_ADDS))
    return res


def search_split(
    mem: Memory, questions: list[str], others: list[str], users: list[str]
) -> dict[str, dict[str, float]]:
    """Hybrid search stage by stage (as the Retriever runs them), plus the whole call;
    interleaved with ``Retriever.search`` on ``others`` (fresh queries, so embedded)."""
    svc = mem.service
    store, emb, settings = svc.store, svc.embedder, svc.settings
    assert emb is not None
    k = 10
    n = max(settings.candidates, k * 3)
    weights = {
        "fulltext": settings.weight_fulltext,
        "vector": settings.weight_vector,
        "context": settings.weight_context,
        "key": settings.weight_key,
    }
    stages: dict[str, list[float]] = {
        s: []
        for s in (
            "embed query",
            "full text + entity list + time window",
            "vector",
            "meaning in context",
            "key",
            "graph: intent + walks",
            "fusion",
            "fetch nodes",
            "stages total",
            "critical path (embed+vector+context ∥ text+lists+key)",
            "Retriever.search, fresh query",
            "Retriever.search, embedding cached",
            "SDK search, embedding cached",
            "SDK overhead (thread hops etc.)",
        )
    }
    for i, (q, other) in enumerate(zip(questions, others, strict=True)):
        user = users[i % len(users)]
        flt = svc.filter(user=user)
        fresh = timed(lambda other=other, flt=flt: svc.retriever.search(other, flt, k))
        stages["Retriever.search, fresh query"].append(fresh)
        ranked: dict[str, list[tuple[str, float]]] = {}
        t = [time.perf_counter()]
        vec = emb.embed_query(q)
        t.append(time.perf_counter())
        graph, lexical = anchored(store, flt, q, limit=n)  # one full-text search for both
        ranked["fulltext"] = lexical.ranked
        t.append(time.perf_counter())
        ranked["vector"] = store.search.vector_search(flt, vec, n)
        t.append(time.perf_counter())
        ranked["context"] = meaning_in_context(store, flt, ranked["vector"], vec, limit=n)
        t.append(time.perf_counter())
        if 0 < len(terms(q)) <= 6:
            ranked["key"] = store.search.key_search(flt, key_form(q), n)
        t.append(time.perf_counter())
        plan = svc.retriever.plan(q)
        seeds = fuse_lists(ranked, graph, weights, settings.weight_graph)
        seeds = seeds[: max(plan.seeds, plan.limit)]
        walks(store, flt, q, plan, [f.id for f in seeds], graph)
        t.append(time.perf_counter())
        relevance = {f.id: f.score for f in seeds}
        top = fuse_lists(ranked, graph, weights, settings.weight_graph, relevance)[:k]
        t.append(time.perf_counter())
        store.memories.get_nodes(flt.namespaces, [f.id for f in top])
        t.append(time.perf_counter())
        parts = [(b - a) * 1000 for a, b in itertools.pairwise(t)]
        for name, ms in zip(stages, parts, strict=False):
            stages[name].append(ms)
        stages["stages total"].append(sum(parts))
        # the Retriever embeds the query, scans the vectors and ranks the replies in context
        # on another thread while the full-text search, the entity and time lists and the
        # key search run here
        both = max(parts[0] + parts[2] + parts[3], parts[1] + parts[4]) + sum(parts[5:])
        stages["critical path (embed+vector+context ∥ text+lists+key)"].append(both)
        # the same query again, its embedding now cached: in this thread, then via the SDK
        direct = timed(lambda q=q, flt=flt: svc.retriever.search(q, flt, k))
        whole = timed(lambda q=q, user=user: mem.search(q, user=user, k=k))
        stages["Retriever.search, embedding cached"].append(direct)
        stages["SDK search, embedding cached"].append(whole)
        stages["SDK overhead (thread hops etc.)"].append(whole - direct)
    return {name: summary(ms) for name, ms in stages.items()}


# ---------------------------------------------------------------------- report
def report(res: dict[str, Any]) -> None:
    rows = []

    def row(name: str, s: dict[str, float], note: str = "") -> None:
        rows.append([name, f"{s['p50']:.2f}", f"{s['p95']:.2f}", f"{s['p99']:.2f}", note])

    b = res["build"]
    row("add (hot path, 1 turn)", res["add_ms"], f"{HOT_ADDS} adds")
    row("search hybrid k=10", res["search_hybrid_ms"], "query embedding included")
    row("search fulltext k=10", res["search_fulltext_ms"], "baseline: BM25 only")
    row("search vector k=10", res["search_vector_ms"], "embedding + vector only")
    row("context budget=1000", res["context_ms"], "includes one hybrid search")
    row("raw INSERT+COMMIT", res["raw_insert_ms"], "baseline: plain WAL table")
    print(
        f"\nN = {res['size']:,} memories (+{HOT_ADDS} hot-path adds, then +{INGEST_TURNS} "
        f"ingest){' — after ANALYZE' if res['analyzed'] else ''}"
    )
    print(table(rows, ["operation (ms)", "p50", "p95", "p99", "note"]))
    ing = res["ingest"]
    print(
        f"ingest with real embeddings: {ing['turns']} turns in {ing['seconds']:.1f}s = "
        f"{ing['turns_per_s']:.0f} turns/s ({ing['real_embeddings']} embedded by the model)\n"
        f"build: add(20 messages) {b['insert_turns_per_s']:.0f} turns/s ({b['insert_s']:.1f}s; "
        f"the worker stores pool vectors meanwhile), then flush() {b['embed_s']:.1f}s; "
        f"DB {res['db_mb']:.0f} MiB; reopen {res['open_ms']:.0f} ms, first search (loads the "
        f"vector cache) {res['first_search_ms']:.0f} ms\n"
        f"RSS {res['rss_mb']:.0f} MiB now, peak {res['peak_rss_mb']:.0f} MiB (process-wide); "
        f"load average (1 min) {res['load_start']:.2f} before, {res['load_end']:.2f} after"
    )
    srows = [
        [name, f"{s['p50']:.2f}", f"{s['p95']:.2f}", f"{s['mean']:.2f}"]
        for name, s in res["split_ms"].items()
    ]
    count = res["split_queries"]
    print(
        f"\nhybrid search split ({count} distinct queries stage by stage, interleaved "
        "with as many fresh ones)"
    )
    print(table(srows, ["stage (ms)", "p50", "p95", "mean"]))
    h, f = res["search_hybrid_ms"], res["search_fulltext_ms"]
    a, r = res["add_ms"], res["raw_insert_ms"]
    print(
        f"\nratios: hybrid/fulltext search p50 {h['p50'] / f['p50']:.1f}x, "
        f"p95 {h['p95'] / f['p95']:.1f}x; add/raw INSERT p50 {a['p50'] / r['p50']:.1f}x, "
        f"p95 {a['p95'] / r['p95']:.1f}x"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--sizes", default="10000,100000", help="comma-separated store sizes")
    ap.add_argument("--queries", type=int, default=200, help="distinct questions per recipe")
    ap.add_argument("--pool", type=int, default=3000, help="distinct sentences embedded for build")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--json", help="write all figures here")
    ap.add_argument("--quick", action="store_true", help="one small size (2000) only")
    ap.add_argument(
        "--analyze",
        action="store_true",
        help="run SQLite ANALYZE after the build (what-if: planner statistics)",
    )
    ap.add_argument(
        "--embedder",
        default="local",
        help="local (int8 ONNX MiniLM, the default) or minilm-fp32 (numpy float32)",
    )
    ap.add_argument("--dir", help="make the temporary databases here (default: system temp)")
    ap.add_argument("--keep", help="build the databases in this new folder and keep them")
    args = ap.parse_args()
    if args.keep and Path(args.keep).exists():
        ap.error(f"--keep {args.keep}: the folder must not exist yet")
    sizes = [2000] if args.quick else [int(s) for s in args.sizes.split(",") if s.strip()]
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    load0 = os.getloadavg()
    started = datetime.now(UTC)
    version = code_version()
    print(
        f"latency bench {started:%Y-%m-%d %H:%M} UTC — {cpus} CPUs, sizes {sizes}, "
        f"load average at start {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f}\n"
        f"memloci {version}, Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}",
        flush=True,
    )

    real = load_embedder(args.embedder)
    getattr(real, "load", lambda: None)()
    print(f"embedder: {args.embedder} = {real!r} ({real.model_id})", flush=True)
    pool = sentence_pool(args.seed, args.pool)
    t = time.perf_counter()
    vectors = real.embed(pool)
    pool_s = time.perf_counter() - t
    print(
        f"pool: {len(pool)} sentences embedded in {pool_s:.1f}s ({len(pool) / pool_s:.0f}/s)",
        flush=True,
    )
    emb = PoolEmbedder(real, dict(zip(pool, vectors, strict=True)))
    results = []
    with tempfile.TemporaryDirectory(prefix="memloci-latency-", dir=args.dir) as tmp:
        for n in sizes:
            print(f"\n== size {n:,}", flush=True)
            folder = Path(args.keep or tmp) / str(n)
            folder.mkdir(parents=True, exist_ok=args.keep is None)
            res = run_size(n, args, pool, emb, folder)
            results.append(res)
            report(res)
            gc.collect()
    load1 = os.getloadavg()
    elapsed = (datetime.now(UTC) - started).total_seconds()
    print(
        f"\nload average at end {load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f}; "
        f"total {elapsed / 60:.1f} min"
    )
    if args.json:
        out = {
            "started": started.isoformat(),
            "cpus": cpus,
            "load_start": load0,
            "load_end": load1,
            "pool": len(pool),
            "code": version,
            "results": results,
        }
        Path(args.json).write_text(json.dumps(out, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
