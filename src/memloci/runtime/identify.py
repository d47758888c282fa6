"""``identify_user`` (layer: runtime): who is talking, from a trigger payload, and what
memory knows about them.

Accepted payloads (other keys are ignored):

* flat: ``{"channel": "telegram", "user_id": 12345, "display_name": "Sam"}`` — the id
  may also be ``id`` or ``identifier``; the name ``display_name``, ``name``,
  ``username`` or ``first_name`` (+ ``last_name``);
* e-mail: ``{"email": "Sam@Example.com"}`` (channel ``email``; lower-cased);
* a Telegram Bot API update: ``{"update_id": …, "message": {"from": {"id": 12345,
  "first_name": "Sam"}}}`` (also ``edited_message``, ``callback_query``, …);
* nested by channel: ``{"telegram": {"from": {"id": 12345}}}``,
  ``{"slack": {"user": "U123"}}``, ``{"discord": {"author": {"id": "42"}}}`` — one key
  naming the channel, whose object holds the person under ``from``, ``user``,
  ``sender`` or ``author`` (an object with ``id`` / ``user_id``, or the id itself), or
  ``user_id`` / ``identifier`` directly, or a Telegram update.

Ids are integers or text (1–200 printable characters); channels are lower-cased names.
Anything else raises :class:`~memloci.errors.ValidationError` saying what is accepted.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from memloci import validate as v
from memloci.context import one_line
from memloci.errors import ValidationError
from memloci.models import FactType, MemoryNode, MemoryUser, NodeType, Scope, utcnow

if TYPE_CHECKING:
    from memloci.service import MemoryService

CONVERSATION_GAP = timedelta(minutes=30)  # contact after a longer silence = a new conversation
PERSON_KEYS = ("from", "user", "sender", "author")
ID_KEYS = ("user_id", "id", "identifier")
TELEGRAM_UPDATES = ("message", "edited_message", "callback_query", "channel_post", "inline_query")
ACCEPTED = (
    'give {"channel": …, "user_id": …}, {"email": …}, a Telegram update, '
    'or {"<channel>": {"from": {"id": …}}}'
)


@dataclass(frozen=True)
class Identity:
    """A person on a channel, as a trigger payload names them."""

    channel: str
    identifier: str
    display_name: str | None = None

    @property
    def canonical_id(self) -> str:
        """The memory user id a new user gets: ``"<channel>:<identifier>"``."""
        return f"{self.channel}:{self.identifier}"


class UserContext(BaseModel):
    """Who is talking and what memory knows about them (for the agent's prompt).

    ``user`` is the canonical memory user (after following ``merged_into``): pass
    ``user.id`` as ``user=`` to every memory call. ``facts`` are their user-scoped
    current facts (newest first), ``episodes`` their recent recorded episodes (newest
    first), ``preferences`` the cached preferences of the user record.
    """

    model_config = ConfigDict(extra="forbid")

    user: MemoryUser
    channel: str
    identifier: str
    created: bool = False
    new_conversation: bool = False
    facts: list[MemoryNode] = Field(default_factory=list)
    episodes: list[MemoryNode] = Field(default_factory=list)
    preferences: dict[str, Any] = Field(default_factory=dict)

    def as_prompt(self) -> str:
        """A short markdown block about the user (deterministic for the same data)."""
        # each field on one line: a name or memory holding line breaks starts no section
        who = one_line(self.user.display_name or self.user.id)
        lines = [f"## About the user\n\nYou are talking with {who} (id {one_line(self.user.id)})."]
        if self.preferences:
            prefs = "; ".join(
                one_line(f"{k}: {self.preferences[k]}") for k in sorted(self.preferences)
            )
            lines.append(f"Preferences: {prefs}.")
        if self.facts:
            lines.append(
                "Known facts:\n" + "\n".join(f"- {one_line(f.content)}" for f in self.facts)
            )
        if self.episodes:
            lines.append(
                "Recent episodes:\n"
                + "\n".join(
                    f"- {e.event_time:%Y-%m-%d}: {one_line(e.content)}" for e in self.episodes
                )
            )
        return "\n\n".join(lines)


def extract_identity(payload: Mapping[str, Any]) -> Identity:
    """The channel, identifier and display name in a trigger payload (see the module
    docstring for the accepted shapes); ValidationError otherwise."""
    if not isinstance(payload, Mapping):
        raise ValidationError(
            f"a trigger payload must be an object, not {type(payload).__name__}", hint=ACCEPTED
        )
    if "channel" in payload:
        channel = _channel(payload["channel"])
        found = _person(payload)
        if found is None:
            raise ValidationError(
                f"payload names channel {channel!r} but no user id",
                hint='add "user_id" (or "id" / "identifier")',
            )
        return Identity(channel, *found)
    if isinstance(payload.get("email"), str):
        return Identity("email", _email(payload["email"]), _name(payload))
    update = _telegram(payload)
    if update is not None:
        return Identity("telegram", *update)
    candidates = [
        (key, found)
        for key, value in payload.items()
        if isinstance(key, str)
        and isinstance(value, Mapping)
        and (found := _person(value, bare_id=False) or _telegram(value)) is not None
    ]
    if len(candidates) > 1:
        names = ", ".join(repr(k) for k, _ in candidates)
        raise ValidationError(
            f"payload names a user on several channels ({names})", hint="send one channel"
        )
    if candidates:
        key, (ident, name) = candidates[0]
        channel = _channel(key)
        return Identity(channel, _email(ident) if channel == "email" else ident, name)
    raise ValidationError("no user found in the trigger payload", hint=ACCEPTED)


async def identify_user(
    service: MemoryService,
    payload: Mapping[str, Any],
    *,
    namespace: str | None = None,
    new_conversation: bool | None = None,
    facts_limit: int = 50,
    episodes_limit: int = 10,
) -> UserContext:
    """Find the memory user a trigger payload names (following ``merged_into``), or
    create ``"<channel>:<id>"`` with that channel identifier; then record the contact
    and load their context.

    ``last_seen`` becomes now; ``conversation_count`` grows by one when this contact
    starts a new conversation — by default when the user is new or was last seen more
    than 30 minutes ago; pass ``new_conversation=True`` / ``False`` to decide. A known
    user without a display name gets the payload's."""
    who = extract_identity(payload)
    ns = v.namespace(namespace or service.settings.namespace)
    f_lim = v.limit(facts_limit, "facts_limit", 1000)
    e_lim = v.limit(episodes_limit, "episodes_limit", 1000)
    if new_conversation is not None:
        v.flag(new_conversation, "new_conversation")
    user = await service.records.find_user(who.channel, who.identifier, namespace=ns)
    created = user is None
    if user is None:
        user = await service.records.save_user(
            who.canonical_id,
            namespace=ns,
            display_name=who.display_name,
            identifiers={who.channel: who.identifier},
        )
        user = await service.records.get_user(user.id, namespace=ns, follow_merged=True)
    elif user.display_name is None and who.display_name is not None:
        user = await service.records.save_user(user.id, namespace=ns, display_name=who.display_name)
    now = utcnow()
    new = new_conversation if new_conversation is not None else _new_conversation(user, now)
    user = await service.records.touch_user(user.id, namespace=ns, new_conversation=new, when=now)
    user = await _cached_preferences(service, ns, user)
    owned = {"namespace": ns, "user": user.id, "owner_user": user.id}
    facts_flt = service.filter(**owned, type=["semantic", "opinion"], scope=Scope.USER)
    episodes_flt = service.filter(**owned, type=NodeType.EPISODIC, category="episode")
    facts, episodes = await asyncio.gather(
        service.memories.list_nodes(facts_flt, limit=f_lim, order="-created"),
        service.memories.list_nodes(episodes_flt, limit=e_lim, order="-created"),
    )
    return UserContext(
        user=user,
        channel=who.channel,
        identifier=who.identifier,
        created=created,
        new_conversation=new,
        facts=facts,
        episodes=episodes,
        preferences={k: val for k, val in user.preferences.items() if k != DERIVED_KEYS},
    )


def _new_conversation(user: MemoryUser, now: datetime) -> bool:
    return user.last_seen is None or now - user.last_seen >= CONVERSATION_GAP


# ---------------------------------------------------------------------- payload parts
def _channel(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(f"invalid channel {value!r}", hint='e.g. "telegram" or "email"')
    return v.name(value, "channel", 50).lower()


def _ident(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int | str):
        return None
    return v.required(str(value).strip() if isinstance(value, str) else value, "user")


def _email(value: str) -> str:
    address = value.strip().lower()
    if address.count("@") != 1 or address.startswith("@") or address.endswith("@"):
        raise ValidationError(f"invalid email address {value!r}", hint="e.g. sam@example.com")
    return v.required(address, "email")


def _name(data: Mapping[str, Any]) -> str | None:
    """``display_name``, else ``name``, else first + last name, else the ``username``
    (a Telegram handle is the last resort, not the person's name)."""
    for key in ("display_name", "name"):
        if isinstance(data.get(key), str) and data[key].strip():
            return v.label(data[key].strip(), key, 200)
    first, last = data.get("first_name"), data.get("last_name")
    if isinstance(first, str) and first.strip():
        full = f"{first.strip()} {last.strip()}" if isinstance(last, str) else first.strip()
        return v.label(full.strip(), "first_name", 200)
    if isinstance(data.get("username"), str) and data["username"].strip():
        return v.label(data["username"].strip(), "username", 200)
    return None


PREFERENCE_SCAN = 1000  # newest current facts of the user read for their preferences
DERIVED_KEYS = "_from_facts"  # the preference keys that came from facts (not shown)


async def _cached_preferences(service: MemoryService, ns: str, user: MemoryUser) -> MemoryUser:
    """Refresh the user's cached preferences from their current ``user_preference``
    facts (a copy kept on the user record so the prompt reads it in one call; the facts stay
    the truth): a keyed fact gives ``key: value``
    (its content without a value), the others are listed under ``"noted"``, oldest
    first. Preferences set by hand under other keys are kept; the record is written only
    when something changed."""
    flt = service.filter(
        namespace=ns,
        user=user.id,
        owner_user=user.id,
        type=["semantic", "opinion"],
        scope=Scope.USER,
    )
    facts = reversed(
        await service.memories.list_nodes(flt, limit=PREFERENCE_SCAN, order="-created")
    )
    derived: dict[str, Any] = {}
    noted: list[str] = []
    for fact in facts:
        if fact.fact_type is not FactType.USER_PREFERENCE:
            continue
        if fact.key:
            derived[fact.key] = fact.value if fact.value is not None else fact.content
        else:
            noted.append(fact.content)
    if noted:
        derived["noted"] = noted
    previous = set(user.preferences.get(DERIVED_KEYS, []))
    kept = {k: val for k, val in user.preferences.items() if k not in previous | {DERIVED_KEYS}}
    fresh = {**kept, **derived}
    if derived:
        fresh[DERIVED_KEYS] = sorted(derived)
    if fresh == user.preferences:
        return user
    return await service.records.save_user(user.id, namespace=ns, preferences=fresh)


def _person(data: Mapping[str, Any], *, bare_id: bool = True) -> tuple[str, str | None] | None:
    """(id, name) from ``data``'s own id keys (``id`` only when ``bare_id``), or from its
    person object."""
    for key in ID_KEYS if bare_id else ("user_id", "identifier"):
        if key in data and (ident := _ident(data[key])) is not None:
            return ident, _name(data)
    for key in PERSON_KEYS:
        value = data.get(key)
        if isinstance(value, Mapping):
            for id_key in ("id", "user_id"):
                if (ident := _ident(value.get(id_key))) is not None:
                    return ident, _name(value) or _name(data)
        elif (ident := _ident(value)) is not None:
            return ident, _name(data)
    return None


def _telegram(data: Mapping[str, Any]) -> tuple[str, str | None] | None:
    """(id, name) of the sender of a Telegram Bot API update."""
    for key in TELEGRAM_UPDATES:
        inner = data.get(key)
        if isinstance(inner, Mapping) and isinstance(inner.get("from"), Mapping):
            sender = inner["from"]
            ident = _ident(sender.get("id"))
            if ident is not None:
                return ident, _name(sender)
    return None
