"""Query intent and complexity (layer: retrieval): what a query asks, and how hard.

The intent (``why`` / ``when`` / ``who`` / ``what`` / ``general``) routes the graph
strategies (:mod:`memloci.retrieval.graph`). Two classifiers:

* :class:`KeywordIntentClassifier` — English and Russian question words and cue
  phrases; always available, microseconds.
* :class:`EmbeddingIntentClassifier` — cosine between the query vector (the one the
  vector search computes anyway) and a few exemplar questions per intent and language
  (English, Russian: the query's alphabet picks the set), embedded once per embedding
  model (in the background; rules meanwhile) and cached. Below a similarity threshold,
  or when the best two intents are too close, it defers to the keyword rules.

For the bundled models the fitted exemplars ship with memloci
(``data/intent_exemplars.json``, written by ``scripts/intent_exemplars.py``, one fit per
model id, keyed by a hash of :data:`LANGUAGES`), so a one-shot search classifies by
exemplars at once instead of embedding them first; any other model, or changed
exemplars, are embedded as before.

Complexity (``simple`` / ``complex``) sets the graph depth, the number of seed hits a
walk starts from, and the context budget: 2 / 5 / 1000 tokens vs 4 / 20 / 3000.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import numpy as np
import numpy.typing as npt

from memloci.providers.base import Embedder
from memloci.words import terms

log = logging.getLogger("memloci.retrieval")


class Intent(StrEnum):
    WHY = "why"
    WHEN = "when"
    WHO = "who"
    WHAT = "what"
    GENERAL = "general"


@dataclass(frozen=True)
class QueryPlan:
    """How one query is searched: its intent, complexity and graph parameters."""

    intent: Intent
    complex: bool
    depth: int  # graph walk depth
    limit: int  # most nodes a walk contributes (and a suggested result count)
    budget: int  # suggested context budget in tokens
    seeds: int  # top hits the chains start from
    source: str = "rules"  # "rules" or "exemplars": which classifier decided

    @property
    def complexity(self) -> str:
        return "complex" if self.complex else "simple"


# A simple question is about one event: chains start from the top hit only (walking
# around lower hits mixes in other events' turns). A complex one — a comparison, an
# aggregate, a sequence — is about several: chains start from the top five.
SIMPLE = {"depth": 2, "limit": 5, "budget": 1000, "seeds": 1}
COMPLEX = {"depth": 4, "limit": 20, "budget": 3000, "seeds": 5}

# ---------------------------------------------------------------------- keyword rules
# The first question word decides ("What did she feel when …" asks *what*); phrases
# come before single words so "what time" is *when* and "how come" is *why*.
_QUESTION = re.compile(
    r"\b(?P<when>when|since when|what (?:time|date|day|year|month|week)s?|which (?:day|date|year"
    r"|month|week)s?|how long|how (?:many|much) (?:time|days|weeks|months|years))\b"
    r"|\b(?P<why>why|how come|what (?:made|makes|caused|causes|led|drove|motivated|inspired"
    r"|prompted)|for what reason)\b"
    r"|\b(?P<who>who|whom|whose|who's|which (?:person|people|friend|friends))\b"
    r"|\b(?P<what>what|which|where|how (?:many|much)|what's)\b"
)
# Russian (ё read as е): "почему" / "зачем" / "из-за чего" ask why; "когда" / "в каком
# году" / "как давно" / "сколько лет" when; "кто" and its cases / "чей" who; "что" /
# "какой" / "где" / "сколько" what. Phrases first, as in English ("что заставило" is why).
_QUESTION_RU = re.compile(
    r"\b(?P<when>когда|с каких пор|как давно|как долго|во сколько|какого числа"
    r"|в (?:какое время|какой (?:день|год|месяц|час|момент)|каком (?:году|месяце|часу))"
    r"|(?:какой|какая|какое) (?:год|день|месяц|дата|число)|сколько (?:времени|лет|дней|недель"
    r"|месяцев))\b"
    r"|\b(?P<why>почему|зачем|отчего|с чего бы|по (?:какой|каким) причин\w*|из-за чего"
    r"|что (?:заставило|побудило|привело|вызвало|стало причиной))\b"
    r"|\b(?P<who>кто|кого|кому|кем|о ком|чей|чья|чье|чьи|чьего|чьей|чьих)\b"
    r"|\b(?P<what>что|чего|чем|чему|о чем|как(?:ой|ая|ое|ие|ого|ую|их|им|ом|ой|ими)"
    r"|где|куда|откуда|сколько)\b"
)
# "что" / "кто" also join clauses ("Я думаю, что он прав"): a Russian question word counts
# in a question (a "?") or when it opens the query, after a preposition at most
_PREPOSITIONS = {"", "с", "со", "о", "об", "в", "во", "на", "для", "у", "к", "по", "из", "от"}
_PREPOSITIONS |= {"до", "за", "про", "при", "а", "и", "но", "так"}
_CUES = (
    (Intent.WHY, re.compile(r"\b(?:because|reasons?|caus(?:e|es|ed)|explain)\b")),
    (Intent.WHEN, re.compile(r"\b(?:timeline|dates?|ago|before|after)\b")),
    (Intent.WHAT, re.compile(r"\b(?:describe|tell me about|list|name)\b")),
    (Intent.WHY, re.compile(r"\b(?:потому что|причин\w*|из-за|объясни\w*)")),
    (Intent.WHEN, re.compile(r"\b(?:хронолог\w*|дат[аыуе]|назад)\b")),
    (Intent.WHAT, re.compile(r"\b(?:опиши|расскажи (?:о|об|про)|перечисли|назови)\b")),
)


class KeywordIntentClassifier:
    """English and Russian rules: the first question word ("why", "when", "who", "what",
    "почему", "когда", "кто", "что", …) decides; without one, cue words ("because",
    "timeline", "tell me about", "потому что"); else ``general``."""

    def classify(self, query: str) -> Intent:
        text = query.lower().replace("’", "'").replace("ё", "е")
        found = [m for m in (_QUESTION.search(text), _QUESTION_RU.search(text)) if m]
        if len(found) and found[-1].re is _QUESTION_RU and "?" not in text:
            ru = found.pop()
            if text[: ru.start()].strip(" ,.!-—").strip() in _PREPOSITIONS:
                found.append(ru)
        if found:
            first = min(found, key=lambda m: m.start())
            if first.lastgroup is not None:
                return Intent(first.lastgroup)
        for intent, pattern in _CUES:
            if pattern.search(text):
                return intent
        return Intent.GENERAL


# ---------------------------------------------------------------------- exemplars
# Parallel exemplars: the same six events asked about with each intent (and stated, for
# ``general``). Each intent's centroid minus the mean of all exemplars is then the
# direction of the question form, not of the topics, which the sentence embedding
# otherwise weighs more.
EXEMPLARS: dict[Intent, tuple[str, ...]] = {
    Intent.WHY: (
        "Why did she move to Berlin?",
        "Why did he quit his job?",
        "Why did they adopt a dog?",
        "What was the reason the release failed?",
        "Why did you start learning the piano?",
        "What made her change her mind about the wedding?",
    ),
    Intent.WHEN: (
        "When did she move to Berlin?",
        "When did he quit his job?",
        "When did they adopt a dog?",
        "When did the release fail?",
        "How long ago did you start learning the piano?",
        "What date is the wedding?",
    ),
    Intent.WHO: (
        "Who moved to Berlin with her?",
        "Who told him to quit his job?",
        "Who helped them adopt a dog?",
        "Who was responsible for the failed release?",
        "Who teaches you the piano?",
        "Who is invited to the wedding?",
    ),
    Intent.WHAT: (
        "What did she do in Berlin?",
        "What job did he quit?",
        "What kind of dog did they adopt?",
        "What broke in the release?",
        "What pieces do you play on the piano?",
        "Where is the wedding?",
    ),
    Intent.GENERAL: (
        "She moved to Berlin.",
        "He quit his job.",
        "They adopted a dog.",
        "The release failed.",
        "I started learning the piano.",
        "The wedding was lovely.",
    ),
}
# centred cosine the best intent must reach, else the rules decide (the default of
# ``Settings.intent_similarity_threshold``)
# Russian: the same form, one set of events of its own (more of them: the bundled
# English models read Cyrillic as word pieces, so a Russian question form stands out
# less). Fitted apart from the English set, its mean taken from its own exemplars.
EXEMPLARS_RU: dict[Intent, tuple[str, ...]] = {
    Intent.WHY: (
        "Почему она переехала в Берлин?",
        "Почему он ушёл с работы?",
        "Зачем они взяли собаку?",
        "Почему провалился релиз?",
        "Почему ты начал учиться играть на пианино?",
        "Что заставило её передумать насчёт свадьбы?",
        "Почему Олег сменил команду?",
        "Из-за чего отменили поездку?",
    ),
    Intent.WHEN: (
        "Когда она переехала в Берлин?",
        "Когда он ушёл с работы?",
        "В каком году они взяли собаку?",
        "Когда провалился релиз?",
        "Как давно ты учишься играть на пианино?",
        "Какого числа свадьба?",
        "Когда Олег сменил команду?",
        "На какой день перенесли поездку?",
    ),
    Intent.WHO: (
        "Кто переехал с ней в Берлин?",
        "Кто сказал ему уйти с работы?",
        "Кто помог им взять собаку?",
        "Кто виноват в провале релиза?",
        "Кто учит тебя играть на пианино?",
        "Кого пригласили на свадьбу?",
        "С кем Олег сменил команду?",
        "Кому отменили поездку?",
    ),
    Intent.WHAT: (
        "Что она делала в Берлине?",
        "С какой работы он ушёл?",
        "Какую собаку они взяли?",
        "Что сломалось в релизе?",
        "Какие пьесы ты играешь на пианино?",
        "Где будет свадьба?",
        "В какую команду перешёл Олег?",
        "Куда была поездка?",
    ),
    Intent.GENERAL: (
        "Она переехала в Берлин.",
        "Он ушёл с работы.",
        "Они взяли собаку.",
        "Релиз провалился.",
        "Я начал учиться играть на пианино.",
        "Свадьба была чудесной.",
        "Олег сменил команду.",
        "Поездку отменили.",
    ),
}
# exemplar sets by language (each with every intent, in the order of :class:`Intent`)
LANGUAGES: dict[str, dict[Intent, tuple[str, ...]]] = {"en": EXEMPLARS, "ru": EXEMPLARS_RU}
_CYRILLIC = re.compile(r"[\u0400-\u04ff]")
_LATIN = re.compile(r"[a-zA-Z]")


def language_of(query: str) -> str:
    """``ru`` when the query has more Cyrillic letters than Latin ones, else ``en``."""
    return "ru" if len(_CYRILLIC.findall(query)) > len(_LATIN.findall(query)) else "en"


THRESHOLD = 0.2
MARGIN = 0.1  # and by how much it must beat the next intent


Fit = tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]  # (mean, unit directions)
Fitted = dict[str, Fit]  # by language (:data:`LANGUAGES`)
RETRY = 60.0  # seconds before fitting is tried again after the embedder failed
PRESET = Path(__file__).resolve().parent.parent / "data" / "intent_exemplars.json"


def exemplars_digest() -> str:
    """A hash of :data:`LANGUAGES` (languages, intents, order and texts): a preset fitted
    from other exemplars is not used."""
    text = json.dumps(
        {lang: {i.value: list(ts) for i, ts in sets.items()} for lang, sets in LANGUAGES.items()},
        ensure_ascii=False,
    )
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def fit_exemplars(embedder: Embedder) -> Fitted:
    """Embed :data:`LANGUAGES` (one call): per language, the mean of its exemplars, and
    per intent the unit direction of its centroid from that mean (rows in the order of
    :class:`Intent`)."""
    texts = [t for sets in LANGUAGES.values() for ts in sets.values() for t in ts]
    vectors = np.asarray(embedder.embed(texts), dtype=np.float32)
    fitted: Fitted = {}
    start = 0
    for lang, sets in LANGUAGES.items():
        size = sum(len(ts) for ts in sets.values())
        block = vectors[start : start + size]
        start += size
        mean = block.mean(axis=0)
        rows, at = [], 0
        for examples in sets.values():
            rows.append(block[at : at + len(examples)].mean(axis=0) - mean)
            at += len(examples)
        directions = np.stack(rows)
        directions /= np.linalg.norm(directions, axis=1, keepdims=True)
        fitted[lang] = (mean, directions)
    return fitted


def load_preset(model: str, path: Path = PRESET) -> Fitted | None:
    """The shipped exemplar fit for ``model``, or None (a model without one, exemplars
    changed since it was written, or no readable file)."""
    fitted: Fitted = {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        fits = data["models"].get(model) if data.get("exemplars") == exemplars_digest() else None
        if fits is None:
            return None
        for lang in LANGUAGES:
            mean = np.asarray(fits[lang]["mean"], dtype=np.float32)
            directions = np.asarray(fits[lang]["directions"], dtype=np.float32)
            if mean.ndim != 1 or directions.shape != (len(Intent), mean.shape[0]):
                return None
            fitted[lang] = (mean, directions)
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None
    return fitted


class _Exemplars:
    """Exemplar directions per embedding model (``model_id``): the shipped preset when it
    matches, else fitted once per process on a background thread — a search never waits
    for it (the rules decide meanwhile)."""

    def __init__(self) -> None:
        self._fitted: dict[str, Fitted] = {}
        self._presets_read: set[str] = set()
        self._running: set[str] = set()
        self._retry_at: dict[str, float] = {}
        self._lock = threading.Lock()

    def get(self, embedder: Embedder, *, wait: bool = False) -> Fitted | None:
        model = embedder.model_id
        with self._lock:
            if model not in self._fitted and model not in self._presets_read:
                self._presets_read.add(model)
                preset = load_preset(model)
                if preset is not None:
                    self._fitted[model] = preset
            if model in self._fitted:
                return self._fitted[model]
            start = model not in self._running and time.monotonic() >= self._retry_at.get(model, 0)
            if start:
                self._running.add(model)
        if start and wait:
            self._fit(embedder)
        elif start:
            threading.Thread(
                target=self._fit, args=(embedder,), name="memloci-intents", daemon=True
            ).start()
        with self._lock:
            return self._fitted.get(model)

    def _fit(self, embedder: Embedder) -> None:
        model = embedder.model_id
        try:
            fitted = fit_exemplars(embedder)
            with self._lock:
                self._fitted[model] = fitted
        except Exception as exc:  # the embedder is down: rules until the retry
            log.warning("intent exemplars not embedded (%s); keyword rules meanwhile", exc)
            with self._lock:
                self._retry_at[model] = time.monotonic() + RETRY
        finally:
            with self._lock:
                self._running.discard(model)


EXEMPLAR_CACHE = _Exemplars()


class EmbeddingIntentClassifier:
    """Centred cosine between the query and each intent's exemplar centroid; the rules
    decide below :data:`THRESHOLD`, within :data:`MARGIN` of the runner-up, or while the
    exemplars are still being embedded (once per model, in the background)."""

    def __init__(
        self,
        embedder: Embedder,
        *,
        threshold: float = THRESHOLD,
        margin: float = MARGIN,
        fallback: KeywordIntentClassifier | None = None,
    ) -> None:
        self.embedder = embedder
        self.threshold = threshold
        self.margin = margin
        self.fallback = fallback or KeywordIntentClassifier()

    def ready(self, *, wait: bool = False) -> bool:
        """Whether the exemplars are embedded (``wait``: embed them now if not)."""
        return EXEMPLAR_CACHE.get(self.embedder, wait=wait) is not None

    def classify(
        self, query: str, vector: npt.NDArray[np.float32] | None = None
    ) -> tuple[Intent, str]:
        """``(intent, source)``; ``vector`` is the query's embedding when already known."""
        fitted = EXEMPLAR_CACHE.get(self.embedder)
        if fitted is not None:
            mean, directions = fitted[language_of(query)]
            if vector is None:
                vector = self.embedder.embed_query(query)
            query_vector = np.asarray(vector, dtype=np.float32)
            centred = query_vector - mean if query_vector.shape == mean.shape else mean * 0
            norm = float(np.linalg.norm(centred))
            if norm > 0:
                sims = (directions @ centred / norm).tolist()
                order = sorted(range(len(sims)), key=lambda i: -sims[i])
                best, runner = sims[order[0]], sims[order[1]]
                if best >= self.threshold and best - runner >= self.margin:
                    return list(Intent)[order[0]], "exemplars"
        return self.fallback.classify(query), "rules"


# ---------------------------------------------------------------------- complexity
_MULTI_PART = re.compile(
    r"\b(?:both|in common|compare[ds]?|comparison|differen(?:ce|t) between|relationship between"
    r"|how (?:many|often)|all (?:the )?|every|over time|history of|timeline|changed?"
    r"|and (?:then|also|later|after|before))\b"
)
COMPLEX_TERMS = 10  # content words from which a query counts as complex on length alone


def is_complex(query: str) -> bool:
    """Several parts (comparisons, aggregates, sequences), several questions, or long."""
    text = query.lower()
    if _MULTI_PART.search(text) or text.count("?") > 1:
        return True
    return len(terms(query)) >= COMPLEX_TERMS


def plan_query(
    query: str,
    *,
    embedder: Embedder | None = None,
    vector: Callable[[], npt.NDArray[np.float32] | None] | None = None,
    threshold: float = THRESHOLD,
) -> QueryPlan:
    """Classify a query. With an embedder, exemplars first (``vector`` gives the query's
    embedding if the caller has it; ``threshold``: ``Settings.intent_similarity_threshold``);
    keyword rules otherwise."""
    source = "rules"
    if embedder is not None:
        classifier = EmbeddingIntentClassifier(embedder, threshold=threshold)
        intent, source = classifier.classify(query, vector() if vector else None)
    else:
        intent = KeywordIntentClassifier().classify(query)
    params = COMPLEX if is_complex(query) else SIMPLE
    return QueryPlan(intent=intent, complex=params is COMPLEX, source=source, **params)
