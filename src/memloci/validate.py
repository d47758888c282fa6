"""Input validation (layer: models — it depends on models and errors only, so every layer
may call it): every edge funnels through these checks.

Each function returns the cleaned value or raises :class:`ValidationError`
with a message that names the field and a hint; none of them does I/O.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from enum import Enum
from typing import Any, TypeVar

from pydantic import ValidationError as PydanticValidationError

from memloci.errors import ValidationError
from memloci.models import (
    CONTENT_MAX,
    CONTENT_MIN,
    ID_RE,
    TURN_MAX,
    EpisodeDetails,
    NodeFilter,
    NodeType,
    Scope,
    ThreadMessage,
    check_id,
    check_namespace,
    sanitize_category,
    utcnow,
)

E = TypeVar("E", bound=Enum)
_IDENT = re.compile(r"^[^\x00-\x1f\ud800-\udfff]{1,200}$")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_SYSTEM_ROLES = {"system", "developer"}
QUERY_MAX = 2_000
JSON_DEPTH_MAX = 32  # nesting of metadata / values / preferences (a dict in a list = 2)
JSON_BYTES_MAX = 64_000  # encoded size of one metadata / value / preferences object
INT_MAX = 2**63 - 1  # what every backend stores (SQLite INTEGER, PostgreSQL BIGINT)
OFFSET_MAX = 10**9


# time phrases a filter takes (``after="last_week"``)
_RELATIVE = {
    "today": timedelta(days=0),
    "yesterday": timedelta(days=1),
    "last_day": timedelta(days=1),
    "last_week": timedelta(days=7),
    "last_month": timedelta(days=30),
    "last_year": timedelta(days=365),
}


def parse_time(value: str | datetime | None, *, now: datetime | None = None) -> datetime | None:
    """``last_week`` / ``last_month`` / ``yesterday`` / ``today`` / ``Nd`` / ISO date → UTC time."""
    if value is None or isinstance(value, datetime):
        return as_utc(value) if isinstance(value, datetime) else None
    now = now or datetime.now(UTC)
    text = str(value).strip().lower().replace(" ", "_").replace("-", "_")
    if text in _RELATIVE:
        start = now - _RELATIVE[text]
        return (
            start.replace(hour=0, minute=0, second=0, microsecond=0)
            if text
            in (
                "today",
                "yesterday",
            )
            else start
        )
    match = re.fullmatch(r"(\d+)_?(d|days?|w|weeks?|h|hours?)", text)
    if match:
        n, unit = int(match.group(1)), match.group(2)[0]
        delta = {"d": timedelta(days=n), "w": timedelta(weeks=n), "h": timedelta(hours=n)}[unit]
        return now - delta
    try:
        return as_utc(datetime.fromisoformat(str(value).strip()))
    except ValueError:
        raise ValidationError(
            f"cannot read time {value!r}",
            hint="use last_week, last_month, yesterday, today, 7d, or an ISO date like 2024-05-01",
        ) from None


def as_utc(value: datetime) -> datetime:
    """Naive datetimes are taken as UTC; aware ones are converted."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def unicode_text(value: str, field: str) -> str:
    """Refuse lone UTF-16 surrogates (``"\\ud800"``): they cannot be stored or sent."""
    if _SURROGATE.search(value):
        raise ValidationError(
            f"{field} contains an unpaired surrogate character (invalid Unicode)",
            hint="send valid UTF-8 text",
        )
    return value


def json_data(value: Any, field: str, *, depth: int = JSON_DEPTH_MAX, nul: bool = False) -> None:
    """Walk a JSON value without recursion: at most ``depth`` levels of nesting, object
    keys are text, numbers are finite and fit 64 bits, no text holds a lone surrogate
    (nor, unless ``nul``, a NUL: PostgreSQL's JSONB cannot hold it).
    Checked before anything is encoded, so a 1,000-deep value never reaches ``json``."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, Mapping | list | tuple):
            if level > depth:
                raise ValidationError(
                    f"{field} is nested more than {depth} levels deep",
                    hint="flatten it; store deep documents as text",
                )
            if isinstance(item, Mapping):
                for k, sub in item.items():
                    if not isinstance(k, str):
                        raise ValidationError(f"{field} keys must be text, not {k!r}")
                    stack.append((k, level))  # a key is text like any other
                    stack.append((sub, level + 1))
            else:
                stack.extend((sub, level + 1) for sub in item)
        elif isinstance(item, str):
            unicode_text(item, field)
            if not nul and "\x00" in item:  # one rule on both backends
                raise ValidationError(
                    f"{field} contains a NUL character", hint="remove it from the text"
                )
        elif isinstance(item, bool) or item is None:
            continue
        elif isinstance(item, int):
            if not -INT_MAX - 1 <= item <= INT_MAX:
                raise ValidationError(f"{field} holds an integer beyond 64 bits")
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise ValidationError(f"{field} holds a non-finite number ({item})")
        else:
            raise ValidationError(
                f"{field} is not JSON-serialisable: {type(item).__name__} is not JSON"
            )


def namespace(value: Any) -> str:
    return check_namespace(value)


def memory_id(value: Any) -> str:
    return check_id(value)


def _text(value: Any, field: str, lo: int, hi: int) -> str:
    if not isinstance(value, str):
        raise ValidationError(f"{field} must be text, not {type(value).__name__}")
    text = value.strip()
    if len(text) < lo:
        raise ValidationError(
            f"{field} is empty" if not text else f"{field} is shorter than {lo} characters",
            hint=f"give {lo}–{hi} characters",
        )
    return _storable(text, field, hi)


def _storable(text: str, field: str, hi: int) -> str:
    """``text`` if it is at most ``hi`` characters of valid Unicode without NUL."""
    if len(text) > hi:
        raise ValidationError(
            f"{field} is {len(text)} characters; the limit is {hi}",
            hint="split it or summarise it",
        )
    if "\x00" in text:
        raise ValidationError(f"{field} contains a NUL character")
    return unicode_text(text, field)


def turn(value: Any) -> str:
    """A conversation turn or episode: 1–20,000 characters."""
    return _text(value, "content", 1, TURN_MAX)


def fact(value: Any) -> str:
    """A fact, procedure or opinion: 5–500 characters."""
    return _text(value, "content", CONTENT_MIN, CONTENT_MAX)


def query(value: Any) -> str:
    return _text(value, "query", 1, QUERY_MAX)


def ident(value: Any, field: str = "session") -> str | None:
    """A user / agent / session id: any printable text up to 200 characters."""
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not _IDENT.match(value) or not value.strip():
        raise ValidationError(
            f"invalid {field} id {value!r}", hint="use 1–200 printable characters"
        )
    return value


def label(value: Any, field: str, hi: int = 100) -> str | None:
    if value is None:
        return None
    return _text(value, field, 1, hi)


def role(value: Any) -> str | None:
    """A turn's role; system prompts are instructions, not memories."""
    text = label(value, "role", 40)
    if text is not None and text.lower() in _SYSTEM_ROLES:
        raise ValidationError(
            "system prompts are not stored as memories",
            hint="add user or assistant turns; pass instructions to learn_procedure",
        )
    return text


def key(value: Any) -> str | None:
    if value is None:
        return None
    text = _text(value, "key", 1, 200)
    if not re.search(r"[A-Za-z0-9]", text):
        raise ValidationError("key needs at least one letter or digit")
    return text


def category(value: Any) -> str:
    if value is not None and not isinstance(value, str):
        raise ValidationError("category must be text")
    return sanitize_category(value)


def enum(kind: type[E], value: Any, field: str) -> E:
    try:
        return kind(value)
    except ValueError:
        options = ", ".join(str(m.value) for m in kind)
        raise ValidationError(f"invalid {field} {value!r}", hint=f"use one of: {options}") from None


def unit(value: Any, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        raise ValidationError(f"{field} must be a number between 0 and 1")
    if not 0.0 <= float(value) <= 1.0:
        raise ValidationError(f"{field} must be between 0 and 1, not {value}")
    return float(value)


def non_negative(value: Any, field: str) -> float:
    """A finite number ≥ 0 (a duration, a count of milliseconds)."""
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or value < 0:
        raise ValidationError(f"{field} must be a number ≥ 0, not {value!r}")
    return float(value)


def limit(value: Any, field: str, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= hi:
        raise ValidationError(f"{field} must be a whole number from 1 to {hi}, not {value!r}")
    return value


def page(lim: Any, offset: Any) -> None:
    limit(lim, "limit", 10_000)
    whole(offset, "offset", 0, OFFSET_MAX)


def whole(value: Any, field: str, lo: int = 0, hi: int = INT_MAX) -> int:
    """A whole number in ``lo..hi`` (never past 64 bits: no OverflowError downstream)."""
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ValidationError(f"{field} must be a whole number from {lo} to {hi}, not {value!r}")
    return value


def _encoded(value: Any, field: str) -> str:
    json_data(value, field)
    try:
        encoded = json.dumps(value, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise ValidationError(f"{field} is not JSON-serialisable: {exc}") from None
    if len(encoded) > JSON_BYTES_MAX:
        raise ValidationError(
            f"{field} is larger than {JSON_BYTES_MAX // 1000} kB", hint="store less"
        )
    return encoded


def json_value(value: Any, field: str = "value") -> None:
    """A fact's structured value: JSON, at most 32 levels deep and 64 kB."""
    _encoded(value, field)


def metadata(value: Any, field: str = "metadata") -> dict[str, Any]:
    """A JSON object (metadata, triggers, preferences): 32 levels, 64 kB at most."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValidationError(f"{field} must be a JSON object (a dict)")
    result: dict[str, Any] = json.loads(_encoded(dict(value), field))
    return result


def when(value: Any, field: str = "event_time") -> datetime | None:
    if value is None:
        return None
    try:
        if isinstance(value, str):
            return parse_time(unicode_text(value, field))
        if not isinstance(value, datetime):
            raise ValidationError(f"{field} must be a datetime or an ISO date string")
        return as_utc(value)
    except (OverflowError, ValueError):  # "99999999999d", year 9999 in UTC-5
        raise ValidationError(
            f"{field} {value!r} is out of range", hint="use a date between years 1 and 9999"
        ) from None


def scope(value: Any, *, user: str | None, agent: str | None, session: str | None) -> Scope:
    """The scope a write lands in; the default is the most specific owner given."""
    if value is None:
        return Scope.USER if user else Scope.AGENT if agent else Scope.GLOBAL
    sc = enum(Scope, value, "scope")
    needs = {Scope.SESSION: session, Scope.USER: user, Scope.AGENT: agent}
    if sc in needs and not needs[sc]:
        raise ValidationError(f"scope {sc.value!r} needs a {sc.value}", hint=f"pass {sc.value}=…")
    return sc


MESSAGE_FIELDS = frozenset({"role", "content", "name"})


def messages(value: Any) -> list[tuple[str, str | None, str | None]]:
    """``[{"role", "content"[, "name"]}, …]`` → turns; system prompts are dropped."""
    if not isinstance(value, Sequence) or isinstance(value, str | bytes):
        raise ValidationError("content must be text or a list of {role, content} messages")
    out = []
    for i, msg in enumerate(value):
        if not isinstance(msg, Mapping) or "content" not in msg:
            raise ValidationError(f"message {i} needs 'role' and 'content'")
        extra = set(msg) - MESSAGE_FIELDS
        if extra:
            raise ValidationError(
                f"message {i} has unknown fields {sorted(map(str, extra))}",
                hint="a message takes role, content and name (who said it)",
            )
        role = label(msg.get("role", "user"), f"message {i} role", 40)
        if role is not None and role.lower() in _SYSTEM_ROLES:
            continue
        name = label(msg.get("name"), f"message {i} name")
        try:
            text = turn(msg["content"])
        except ValidationError as exc:
            raise ValidationError(f"message {i}: {exc.message}", hint=exc.hint) from None
        out.append((text, name, role))
    if not out:
        raise ValidationError("no user or assistant messages to add")
    return out


def episode(value: Any) -> EpisodeDetails | None:
    if value is None:
        return value
    if isinstance(value, EpisodeDetails):  # built without these checks: inf, deep JSON…
        json_data({k: x for k, x in value if not isinstance(x, datetime)}, "details")
        return value
    json_data(value, "details")
    try:
        return EpisodeDetails.model_validate(value)
    except PydanticValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(['details', *map(str, e['loc'])])}: "
            + (
                "unknown field"
                if e["type"] == "extra_forbidden"
                else e["msg"][:1].lower() + e["msg"][1:]
            )
            for e in exc.errors(include_url=False)
        )
        raise ValidationError(
            f"invalid episode details: {problems}",
            hint=f"details take {', '.join(EpisodeDetails.model_fields)}",
        ) from None


TRIGGER_KEYS = ("goal_contains",)
TRIGGER_WORDS_MAX = 50


def triggers(value: Any) -> dict[str, list[str]]:
    """A procedure's trigger conditions: ``{"goal_contains": ["deploy", …]}`` (a single
    phrase may be given as text); ``None`` or ``{}``: none (a standing instruction).
    An unknown key, an empty list or a phrase that is not text is refused: each would
    silently turn a triggered procedure into one that is always in the prompt."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValidationError(
            "triggers must be an object", hint='e.g. {"goal_contains": ["deploy"]}'
        )
    out: dict[str, list[str]] = {}
    for k, words in value.items():
        if k not in TRIGGER_KEYS:
            raise ValidationError(
                f"unknown trigger {k!r}",
                hint=f'use {", ".join(TRIGGER_KEYS)}, e.g. {{"goal_contains": ["deploy"]}}',
            )
        items = [words] if isinstance(words, str) else words
        if not isinstance(items, list | tuple) or not items:
            raise ValidationError(
                f"triggers.{k} must be a non-empty list of words or phrases",
                hint='e.g. ["deploy", "release"]',
            )
        if len(items) > TRIGGER_WORDS_MAX:
            raise ValidationError(f"triggers.{k} has more than {TRIGGER_WORDS_MAX} entries")
        phrases = []
        for j, word in enumerate(items):
            if not isinstance(word, str):
                raise ValidationError(f"triggers.{k}[{j}] must be text, not {type(word).__name__}")
            phrase = _text(word, f"triggers.{k}[{j}]", 1, 100)
            if not re.search(r"\w", phrase):
                raise ValidationError(f"triggers.{k}[{j}] {phrase!r} has no letters or digits")
            phrases.append(phrase)
        out[k] = list(dict.fromkeys(phrases))
    return out


def _many(value: Any, field: str) -> tuple[str, ...] | None:
    """One value or a list of them (text or enum members); anything else is refused."""
    if value is None:
        return None
    items: Iterable[Any] = [value] if isinstance(value, str | Enum) else value
    if not isinstance(items, list | tuple | set | frozenset):
        raise ValidationError(
            f"{field} must be text or a list of texts, not {type(value).__name__}"
        )
    for i in items:
        if not isinstance(i, str | Enum):
            raise ValidationError(
                f"{field} must be text or a list of texts; {i!r} ({type(i).__name__}) is not text"
            )
    return tuple(str(i.value if isinstance(i, Enum) else i) for i in items) or None


def node_filter(
    *,
    default_namespace: str,
    namespace: str | Sequence[str] | None = None,
    user: str | None = None,
    agent: str | None = None,
    session: str | None = None,
    owner_user: str | None = None,
    sessions: Sequence[str] | None = None,
    type: Any = None,
    scope: Any = None,
    category: Any = None,
    after: Any = None,
    before: Any = None,
    min_confidence: float | None = None,
    as_of: Any = None,
    include_forgotten: bool = False,
) -> NodeFilter:
    """Validated :class:`NodeFilter` from the keyword arguments every interface takes."""
    nss = _many(namespace, "namespace") or (default_namespace,)
    types = _many(type, "type")
    scopes = _many(scope, "scope")
    cats = _many(category, "category")
    return NodeFilter(
        namespaces=tuple(check_namespace(n) for n in nss),
        user=ident(user, "user"),
        agent=ident(agent, "agent"),
        session=ident(session),
        owner_user=ident(owner_user, "user"),
        sessions=tuple(ident(s) or "" for s in sessions) if sessions else None,
        types=tuple(enum(NodeType, t, "type") for t in types) if types else None,
        scopes=tuple(enum(Scope, s, "scope") for s in scopes) if scopes else None,
        categories=tuple(sanitize_category(c) for c in cats) if cats else None,
        after=when(after, "after"),
        before=when(before, "before"),
        min_confidence=unit(min_confidence, "min_confidence")
        if min_confidence is not None
        else None,
        as_of=when(as_of, "as_of"),
        include_invalid=bool(include_forgotten),
    )


# ---------------------------------------------------------------------- records
THREAD_ROLES = ("user", "assistant", "tool")


def required(value: Any, field: str) -> str:
    """A user / thread id that must be given (see :func:`ident`)."""
    if value is None:
        raise ValidationError(f"{field} id is missing")
    out = ident(value, field)
    assert out is not None
    return out


def short_ref(value: Any, what: str) -> str:
    """An 8-character entity or API key id."""
    if not isinstance(value, str) or not ID_RE.match(value):
        raise ValidationError(
            f"invalid {what} id {value!r}", hint="ids are 8 letters/digits, e.g. a1B2c3D4"
        )
    return value


def ids(values: Any, check: Any) -> list[str]:
    """A list of ids for a bulk call, each passed through ``check``; duplicates dropped."""
    if isinstance(values, str | bytes) or not isinstance(values, Sequence):
        raise ValidationError("ids must be a list", hint='e.g. ["a1B2c3D4"]')
    return list(dict.fromkeys(check(i) for i in values))


def flag(value: Any, field: str) -> bool:
    if not isinstance(value, bool):
        raise ValidationError(f"{field} must be true or false, not {value!r}")
    return value


def identifiers(value: Any) -> dict[str, str]:
    """Channel identifiers of a user: ``{"telegram": "12345", "email": "a@b.c"}``."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValidationError("identifiers must be an object of channel → id")
    out: dict[str, str] = {}
    for chan, ref in value.items():
        channel = name(chan, "channel", 50).lower()
        out[channel] = required(ref, channel)
    return out


def name(value: Any, field: str = "name", hi: int = 200) -> str:
    """A required name (entity, alias, API key): inner whitespace folded."""
    return " ".join(_text(value, field, 1, hi).split())


def aliases(values: Any, canonical: str) -> list[str]:
    """Aliases without duplicates (case-insensitive) and without the canonical name."""
    if isinstance(values, str) or not isinstance(values, Iterable):
        raise ValidationError("aliases must be a list of names")
    seen, out = {canonical.casefold()}, []
    for value in values:
        alias = name(value, "alias")
        if alias.casefold() not in seen:
            seen.add(alias.casefold())
            out.append(alias)
    if len(out) > 100:
        raise ValidationError("an entity has at most 100 aliases")
    return out


def key_namespaces(values: Any, *, admin: bool) -> list[str]:
    """The namespaces an API key may use; ``["*"]`` (all) only for admin keys."""
    if isinstance(values, str) or not isinstance(values, Sequence) or not values:
        raise ValidationError("namespaces must be a non-empty list", hint='e.g. ["default"]')
    if "*" in values:
        if not admin:
            raise ValidationError('only admin keys may use "*" (all namespaces)')
        return ["*"]
    return list(dict.fromkeys(check_namespace(n) for n in values))


def thread_messages(values: Any) -> list[ThreadMessage]:
    """Thread messages (models or ``{"role", "content"[, "created_at", "metadata"]}``);
    system prompts are dropped. Content is kept verbatim and may be empty."""
    if isinstance(values, str | bytes) or not isinstance(values, Sequence):
        raise ValidationError("messages must be a list of {role, content} messages")
    out: list[ThreadMessage] = []
    for i, msg in enumerate(values):
        data = msg.model_dump() if isinstance(msg, ThreadMessage) else msg
        if not isinstance(data, Mapping) or "role" not in data or "content" not in data:
            raise ValidationError(f"message {i} needs 'role' and 'content'")
        extra = set(data) - {"role", "content", "created_at", "metadata"}
        if extra:
            raise ValidationError(
                f"message {i} has unknown fields {sorted(extra)}", hint="put them in metadata"
            )
        role = str(label(data["role"], f"message {i} role", 40)).lower()
        if role in _SYSTEM_ROLES:
            continue
        if role not in THREAD_ROLES:
            raise ValidationError(
                f"message {i} role {role!r} is not allowed", hint="use user, assistant or tool"
            )
        content = data["content"]
        if not isinstance(content, str):
            raise ValidationError(f"message {i} content must be text, not {type(content).__name__}")
        _storable(content, f"message {i} content", TURN_MAX)
        out.append(
            ThreadMessage(
                role=role,
                content=content,
                created_at=when(data.get("created_at")) or utcnow(),
                metadata=metadata(data.get("metadata"), f"message {i} metadata"),
            )
        )
    return out
