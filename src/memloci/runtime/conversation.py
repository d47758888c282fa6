"""Conversation memory (layer: runtime): short-term memory of one conversation, saved
after every turn, resumable, windowed, optionally summarised, pruned to a few sessions.

One conversation is one thread of the service (``append_messages`` / ``get_thread`` /
``save_thread`` / ``delete_threads``), identified by user + chat + agent
(:func:`thread_id`). A *session* is one run of the agent (one REPL, one trigger); each
message carries its session id in ``metadata["session"]``. Only ``user``, ``assistant``
and ``tool`` messages are stored: the system prompt is held apart
(:attr:`ConversationMemory.system_prompt`, with a stable :attr:`~ConversationMemory.system_id`)
and handed out once per :meth:`~ConversationMemory.window`, so checkpoints never repeat it
and a changed role file takes effect on resume.

Saving never raises into the agent loop: a failure is logged (``memloci.runtime``),
reported once per distinct error on stderr, counted in ``failures``, and the
conversation goes on in memory.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import logging
import secrets
import sys
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypedDict, TypeVar

from memloci import validate as v
from memloci.errors import MemlociError, NotFoundError, ValidationError
from memloci.models import TURN_MAX, Thread, ThreadMessage, utcnow

if TYPE_CHECKING:
    from memloci.providers.llm import LLM
    from memloci.service import MemoryService

T = TypeVar("T")
logger = logging.getLogger("memloci.runtime")

STORED_ROLES = ("user", "assistant", "tool")
SYSTEM_ROLES = ("system", "developer")
SESSION_KEY = "session"  # message metadata key holding the session id
ID_MAX, ID_KEEP = 200, 150  # thread ids: longer ones keep 150 characters + a hash
Summarizer = Callable[[str | None, Sequence[ThreadMessage]], str | Awaitable[str]]
SUMMARY_SYSTEM = (
    "You keep a running summary of a conversation between a user and an assistant. "
    "Merge the new turns into the summary: keep names, facts, decisions, open questions "
    "and the user's preferences; drop small talk. Answer with the summary only, in at "
    "most 200 words."
)


def thread_id(user: str, chat: str | None = None, agent: str | None = None) -> str:
    """The conversation's thread id: ``"<user>|<chat>|<agent>"``.

    A missing chat or agent is an empty part; ``%``, ``|`` and ``#`` inside a part are
    percent-escaped (``%25``, ``%7C``, ``%23``), so different triples never share an id.
    Ids longer than 200 characters keep their first 150 and end in ``#`` + 32 hex
    digits of the SHA-256 of the whole id. Stable across versions (stored data uses it).
    """
    parts = [v.required(user, "user"), v.ident(chat, "chat") or "", v.ident(agent, "agent") or ""]
    full = "|".join(_escape(p) for p in parts)
    if len(full) <= ID_MAX:
        return full
    return f"{full[:ID_KEEP]}#{hashlib.sha256(full.encode()).hexdigest()[:32]}"


def _escape(part: str) -> str:
    return part.replace("%", "%25").replace("|", "%7C").replace("#", "%23")


def new_session_id() -> str:
    """A fresh session id: 12 random hex characters."""
    return secrets.token_hex(6)


@dataclass(frozen=True)
class ConversationWindow:
    """What goes into the next model call: the system prompt (once, with its stable
    ``system_id``), the running ``summary`` of older turns, and the recent ``messages``
    (never starting with an assistant or tool message)."""

    messages: tuple[ThreadMessage, ...]
    summary: str | None = None
    system_prompt: str | None = None
    system_id: str | None = None

    def chat(self, *, system: bool = False) -> list[dict[str, str]]:
        """``[{"role", "content"}, …]``; with ``system=True`` the text of :meth:`system`
        comes first as a ``system`` message (for APIs that take it in the list)."""
        head = [{"role": "system", "content": self.system()}] if system and self.system() else []
        return head + [{"role": m.role, "content": m.content} for m in self.messages]

    def system(self, context: str | None = None) -> str:
        """The system text: the prompt, then ``context`` (e.g. ``memory.context(...)``),
        then the summary — stable parts first, so provider prompt caches stay warm."""
        parts = [self.system_prompt or "", context or ""]
        if self.summary:
            parts.append(f"## Summary of the earlier conversation\n\n{self.summary}")
        return "\n\n".join(p.strip() for p in parts if p and p.strip())


class ConversationMemory:
    """Short-term memory of one conversation (async; see :class:`SyncConversation`).

    ``user`` is required; ``chat`` (e.g. a Telegram chat id) and ``agent`` (the role's
    name) complete the thread key. ``window``: messages :meth:`window` returns at most
    (more only when needed to start on a user message); ``max_sessions``: sessions kept
    in the thread (oldest pruned on :meth:`start` and :meth:`end`);
    ``max_resume_messages``: messages loaded by ``start(resume=True)``; ``summarize``:
    ``summarize(previous_summary, older_messages) -> new_summary`` (sync or async; see
    :func:`llm_summarizer`) folds turns leaving the window into a running summary
    instead of dropping them — in batches of a quarter window, so it runs every
    ``window // 4`` messages, not every turn. Bad arguments raise ValidationError here;
    afterwards nothing raises but a role that is not user/assistant/tool/system.
    """

    def __init__(
        self,
        service: MemoryService,
        *,
        user: str,
        chat: str | None = None,
        agent: str | None = None,
        namespace: str | None = None,
        window: int = 40,
        max_sessions: int = 10,
        max_resume_messages: int = 20,
        summarize: Summarizer | None = None,
        system_prompt: str | None = None,
    ) -> None:
        self.service = service
        self.user = v.required(user, "user")
        self.chat, self.agent = v.ident(chat, "chat"), v.ident(agent, "agent")
        self.namespace = v.namespace(namespace or service.settings.namespace)
        self.window_size = v.limit(window, "window", 10_000)
        self.max_sessions = v.limit(max_sessions, "max_sessions", 100_000)
        self.max_resume_messages = v.limit(max_resume_messages, "max_resume_messages", 10_000)
        if summarize is not None and not callable(summarize):
            raise ValidationError("summarize must be a callable (previous, messages) -> str")
        if system_prompt is not None and not isinstance(system_prompt, str):
            raise ValidationError("system_prompt must be text")
        self.summarize = summarize
        self.system_prompt = system_prompt
        self.thread_id = thread_id(self.user, self.chat, self.agent)
        self.session: str | None = None
        self.resumed = False
        self.failures = 0
        self.last_error: str | None = None
        self._messages: list[ThreadMessage] = []
        self._summary: str | None = None

    # ------------------------------------------------------------------ reading
    @property
    def system_id(self) -> str | None:
        """A stable id of the current system prompt (``system-`` + 16 hex of its
        SHA-256): the same prompt always has the same id, so a framework that merges
        messages by id never holds it twice."""
        if not self.system_prompt:
            return None
        return "system-" + hashlib.sha256(self.system_prompt.encode()).hexdigest()[:16]

    @property
    def summary(self) -> str | None:
        return self._summary

    def window(self) -> ConversationWindow:
        """The last ``window`` messages of this session (plus the summary, if any)."""
        start = _user_start(self._messages, len(self._messages) - self.window_size)
        return ConversationWindow(
            messages=tuple(_from_user(self._messages[start:])),
            summary=self._summary,
            system_prompt=self.system_prompt,
            system_id=self.system_id,
        )

    # ------------------------------------------------------------------ sessions
    async def start(self, *, resume: bool = False) -> str:
        """Begin a session and return its id. ``resume=True`` continues the latest
        session of this thread with its last ``max_resume_messages`` messages (leading
        assistant / tool messages skipped) and its summary; otherwise, or when there is
        nothing to resume, a new session starts and old ones are pruned so that at most
        ``max_sessions`` remain with it."""
        self._messages, self._summary, self.resumed = [], None, False
        thread = await self._load()
        if resume and thread is not None and thread.messages:
            last = _session(thread.messages[-1])
            run: list[ThreadMessage] = []
            for msg in reversed(thread.messages):
                if _session(msg) != last or len(run) >= self.max_resume_messages:
                    break
                run.append(msg)
            self._messages = _from_user(run[::-1])
            self._summary = thread.summary
            self.session = last or new_session_id()
            self.resumed = True
            return self.session
        self.session = new_session_id()
        if thread is not None:
            await self._prune(thread, keep=self.max_sessions - 1, clear_summary=True)
        return self.session

    async def end(self) -> None:
        """The session is over (REPL exit, end of a trigger run): prune the thread to
        ``max_sessions`` sessions. Never raises."""
        thread = await self._load()
        if thread is not None:
            await self._prune(thread, keep=self.max_sessions, clear_summary=False)

    # ------------------------------------------------------------------ writing
    async def record(
        self, role: str, content: str, *, metadata: Mapping[str, Any] | None = None
    ) -> bool:
        """Add a message and checkpoint it at once; True when it was saved.

        ``system`` / ``developer`` messages are not stored: they replace
        :attr:`system_prompt`. A message longer than 20,000 characters is stored
        truncated (kept whole in the window). Starts a session if none was started.
        Raises only for an unknown role (a programming error)."""
        kind = str(role).strip().lower() if isinstance(role, str) else ""
        if kind not in (*STORED_ROLES, *SYSTEM_ROLES):
            raise ValidationError(
                f"role {role!r} is not allowed", hint="use user, assistant, tool or system"
            )
        text = content if isinstance(content, str) else str(content)
        if kind in SYSTEM_ROLES:
            self.system_prompt = text
            return True
        if self.session is None:
            await self.start()
        meta = {**(metadata or {}), SESSION_KEY: self.session}
        msg = ThreadMessage(role=kind, content=text, created_at=utcnow(), metadata=meta)
        self._messages.append(msg)
        saved = await self._append(msg)
        await self._fold()
        return saved

    async def _append(self, msg: ThreadMessage) -> bool:
        text = msg.content.replace("\x00", "")
        if len(text) > TURN_MAX:
            text = text[: TURN_MAX - 14] + " …[truncated]"
        try:
            await self.service.records.append_messages(
                self.thread_id,
                [msg.model_copy(update={"content": text})],
                namespace=self.namespace,
                user=self.user,
                agent=self.agent,
            )
        except Exception as exc:
            self._report("save the conversation", exc)
            return False
        return True

    async def _fold(self) -> None:
        """Keep the in-memory history within the window; summarise what leaves it."""
        if len(self._messages) <= self.window_size:
            return
        keep = self.window_size - (self.window_size // 4 if self.summarize else 0)
        cut = _user_start(self._messages, len(self._messages) - keep)
        older, self._messages = self._messages[:cut], self._messages[cut:]
        if self.summarize is None or not older:
            return
        try:
            if inspect.iscoroutinefunction(self.summarize):
                result = await self.summarize(self._summary, older)
            else:
                result = await asyncio.to_thread(self.summarize, self._summary, older)
                if inspect.isawaitable(result):
                    result = await result
        except Exception as exc:
            self._report("summarise older turns", exc)
            return
        summary = str(result).strip()[:TURN_MAX]
        if summary:
            self._summary = summary
            await self._save_summary()

    async def _save_summary(self) -> None:
        try:
            thread = await self.service.records.get_thread(self.thread_id, namespace=self.namespace)
            await self.service.records.save_thread(
                thread.model_copy(update={"summary": self._summary})
            )
        except Exception as exc:
            self._report("save the conversation summary", exc)

    # ------------------------------------------------------------------ store access
    async def _load(self) -> Thread | None:
        try:
            return await self.service.records.get_thread(self.thread_id, namespace=self.namespace)
        except NotFoundError:
            return None
        except Exception as exc:
            self._report("load the conversation", exc)
            return None

    async def _prune(self, thread: Thread, *, keep: int, clear_summary: bool) -> None:
        order = list(dict.fromkeys(_session(m) for m in thread.messages))
        drop = set(order[: max(len(order) - keep, 0)])
        kept = [m for m in thread.messages if _session(m) not in drop]
        summary = None if clear_summary else thread.summary
        if len(kept) == len(thread.messages) and summary == thread.summary:
            return
        try:
            if kept:
                new = thread.model_copy(update={"messages": kept, "summary": summary})
                await self.service.records.save_thread(new)
            else:
                await self.service.records.delete_threads(
                    [self.thread_id], namespace=self.namespace
                )
        except Exception as exc:
            self._report("prune old sessions", exc)

    def _report(self, doing: str, exc: Exception) -> None:
        """Log and tell the user on stderr (once per distinct error); never raise."""
        self.failures += 1
        text = exc.message if isinstance(exc, MemlociError) else f"{type(exc).__name__}: {exc}"
        logger.warning(
            "conversation %r: could not %s: %s",
            self.thread_id,
            doing,
            text,
            exc_info=None if isinstance(exc, MemlociError) else exc,
        )
        if text != self.last_error:
            print(f"memloci: could not {doing} ({text}); continuing", file=sys.stderr)
        self.last_error = text


def _session(msg: ThreadMessage) -> str | None:
    sid = msg.metadata.get(SESSION_KEY)
    return sid if isinstance(sid, str) else None


def _from_user(msgs: Sequence[ThreadMessage]) -> list[ThreadMessage]:
    """``msgs`` without leading assistant / tool messages."""
    for i, msg in enumerate(msgs):
        if msg.role == "user":
            return list(msgs[i:])
    return []


def _user_start(msgs: Sequence[ThreadMessage], at: int) -> int:
    """The first user message at or after ``at``; else the last one before it."""
    at = max(at, 0)
    after = [i for i in range(at, len(msgs)) if msgs[i].role == "user"]
    if after:
        return after[0]
    before = [i for i in range(at) if msgs[i].role == "user"]
    return before[-1] if before else at


def llm_summarizer(llm: LLM, *, max_tokens: int = 400) -> Callable[..., str]:
    """A ``summarize`` callable for :class:`ConversationMemory` backed by an LLM client
    (:func:`memloci.providers.llm.load_llm`); it runs in a worker thread."""

    def summarize(previous: str | None, messages: Sequence[ThreadMessage]) -> str:
        turns = "\n".join(f"{m.role}: {m.content}" for m in messages)
        before = f"Summary so far:\n{previous}\n\n" if previous else ""
        prompt = f"{before}New turns:\n{turns}\n\nWrite the updated summary."
        return llm.complete(
            [{"role": "user", "content": prompt}],
            system=SUMMARY_SYSTEM,
            max_tokens=max_tokens,
            temperature=0.0,
        ).strip()

    return summarize


class Runner(Protocol):
    """Runs a coroutine to completion from sync code (``Memory._call``)."""

    def __call__(self, coro: Coroutine[Any, Any, T], /) -> T: ...


class ConversationOptions(TypedDict, total=False):
    """Keyword options of :class:`ConversationMemory` besides ``user`` (all optional)."""

    chat: str | None
    agent: str | None
    namespace: str | None
    window: int
    max_sessions: int
    max_resume_messages: int
    summarize: Summarizer | None
    system_prompt: str | None


class SyncConversation:
    """:class:`ConversationMemory` for sync code (``Memory.conversation(...)``): the
    same methods, run on the ``Memory``'s event loop."""

    def __init__(self, conversation: ConversationMemory, run: Runner) -> None:
        self.conversation = conversation
        self._run = run

    def start(self, *, resume: bool = False) -> str:
        return self._run(self.conversation.start(resume=resume))

    def record(self, role: str, content: str, *, metadata: Mapping[str, Any] | None = None) -> bool:
        return self._run(self.conversation.record(role, content, metadata=metadata))

    def end(self) -> None:
        self._run(self.conversation.end())

    def window(self) -> ConversationWindow:
        return self.conversation.window()

    @property
    def session(self) -> str | None:
        return self.conversation.session

    @property
    def thread_id(self) -> str:
        return self.conversation.thread_id

    @property
    def resumed(self) -> bool:
        return self.conversation.resumed

    @property
    def failures(self) -> int:
        return self.conversation.failures

    @property
    def system_prompt(self) -> str | None:
        return self.conversation.system_prompt

    @system_prompt.setter
    def system_prompt(self, value: str | None) -> None:
        self.conversation.system_prompt = value

    start.__doc__ = ConversationMemory.start.__doc__
    record.__doc__ = ConversationMemory.record.__doc__
    end.__doc__ = ConversationMemory.end.__doc__
    window.__doc__ = ConversationMemory.window.__doc__
