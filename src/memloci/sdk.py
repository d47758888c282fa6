"""The SDK (layer: sdk): ``AsyncMemory`` over the service; ``Memory`` is its sync facade."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable, Coroutine, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar, Unpack

from pydantic import ValidationError as PydanticValidationError

from memloci.config import Settings
from memloci.errors import ValidationError
from memloci.models import (
    ContextReport,
    Explanation,
    KnowledgeHit,
    MemoryNode,
    MemoryVersion,
    NodeFilter,
    SearchHit,
    StoreStats,
    WriteResult,
)
from memloci.providers.base import Embedder
from memloci.sdk_args import (
    CONTEXT,
    OPTIONS,
    SEARCH,
    TURN,
    ContextFilters,
    CorrectOptions,
    EpisodeOptions,
    KnowledgeAddOptions,
    KnowledgeSearchOptions,
    LookupOptions,
    ProcedureOptions,
    ProcedureUseOptions,
    RememberOptions,
    SearchFilters,
    TurnOptions,
    UpdateOptions,
    known,
)
from memloci.sdk_loop import LoopThread
from memloci.service import MemoryService
from memloci.service.compose import FROM_SETTINGS, build_service
from memloci.storage.base import Store

if TYPE_CHECKING:  # loaded on first use: a plain search needs none of these
    from memloci.consolidation.consolidator import ConsolidationReport as Consolidated
    from memloci.consolidation.maintenance import MaintenanceReport as Maintained
    from memloci.runtime.conversation import (
        ConversationMemory,
        ConversationOptions,
        SyncConversation,
    )
    from memloci.runtime.identify import UserContext
    from memloci.sdk_tools import MemoryTools, SyncTools
    from memloci.service.documents import KnowledgeReport, PathLike
    from memloci.service.knowledge import KnowledgeProgress
    from memloci.service.privacy import ForgetReport
    from memloci.service.transfer import ImportReport

P = ParamSpec("P")
T = TypeVar("T")


class AsyncMemory:
    """Long-term memory for an agent (async).

    ``AsyncMemory("memories.db")`` opens (or creates) an embedded SQLite store
    with the bundled local embedding model; ``AsyncMemory("postgresql://…")`` uses
    PostgreSQL (``pip install 'memloci[postgres]'``). Pass ``embedder=None`` for full-text
    only, or any :class:`~memloci.providers.base.Embedder`. ``memory.tools`` runs the
    agent tools, unbound or bound: ``memory.tools(user="u1").call(name, arguments)``.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        namespace: str | None = None,
        embedder: Embedder | str | None = "local",
        store: Store | None = None,
        settings: Settings | None = None,
        reembed: bool = False,
        **options: Any,
    ) -> None:
        overrides: dict[str, Any] = dict(options)
        if isinstance(path, os.PathLike):  # a pathlib.Path, as a user would pass
            path = os.fspath(path)
        if path is not None:
            overrides["path"] = path
        if namespace is not None:
            overrides["namespace"] = namespace
        if isinstance(embedder, str):
            overrides["embedder"] = embedder
        base = settings.model_dump() if settings else {}
        try:
            self.settings = Settings(**{**base, **overrides})
        except PydanticValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()
            )
            raise ValidationError(
                f"invalid settings: {problems}", hint="see the Configuration table in the README"
            ) from None
        self.service: MemoryService = build_service(
            self.settings,
            store=store,
            embedder=FROM_SETTINGS if isinstance(embedder, str) else embedder,
            reembed=reembed,
        )
        self._tools: MemoryTools | None = None

    @property
    def tools(self) -> MemoryTools:
        """The agent tools: ``await memory.tools.call(name, arguments)``, or bound to a
        caller with ``memory.tools(user=…, agent=…, session=…, namespace=…)``."""
        if self._tools is None:  # built on first use (the tool definitions load then)
            from memloci.sdk_tools import MemoryTools

            self._tools = MemoryTools(self.service)
        return self._tools

    def _flt(self, **kwargs: Any) -> NodeFilter:
        return self.service.filter(**kwargs)

    async def add(
        self, content: str | Sequence[Mapping[str, Any]], **turn: Unpack[TurnOptions]
    ) -> MemoryNode | list[MemoryNode]:
        """Add a conversation turn (or a list of ``{"role", "content"}`` messages).

        Options: ``user``, ``session``, ``speaker``, ``role``, ``agent``, ``event_time``,
        ``metadata``, ``namespace``.
        """
        known("add", turn, TURN)
        nodes = await self.service.memories.add(content, **turn)
        return nodes[0] if isinstance(content, str) else nodes

    async def search(
        self, query: str, *, k: int = 10, recipe: str = "hybrid", **filters: Unpack[SearchFilters]
    ) -> list[SearchHit]:
        """Hybrid search (full text + meaning + keys); best first.

        Filters: ``user``, ``agent``, ``session`` (who is asking), ``namespace`` (one or
        several), ``type``, ``category``, ``scope``, ``after`` / ``before`` (``last_week``,
        ``7d``, ISO dates…), ``min_confidence``, ``as_of``.
        """
        known("search", filters, SEARCH)
        return await self.service.memories.search(query, self._flt(**filters), k=k, recipe=recipe)

    async def context(
        self,
        prompt: str | None = None,
        *,
        budget: int | None = None,
        **filters: Unpack[ContextFilters],
    ) -> str:
        """A markdown block for the system prompt, within ``budget`` tokens."""
        known("context", filters, CONTEXT)
        return await self.service.context.context(prompt, self._flt(**filters), budget=budget)

    async def context_parts(
        self,
        prompt: str | None = None,
        *,
        budget: int | None = None,
        loaded: str | None = None,
        **filters: Unpack[ContextFilters],
    ) -> tuple[str, str]:
        """:meth:`context` in two parts, ``(cacheable, dynamic)``: the cacheable part
        (procedures without triggers and "Your Memory") changes only when the memory set
        does; the dynamic part is what the prompt brings up. ``loaded``: the cacheable
        part a conversation keeps using (loaded once, for the prompt cache) — a fact
        written since then is brought up in the dynamic part, not taken for shown."""
        known("context_parts", filters, CONTEXT)
        return await self.service.context.context_parts(
            prompt, self._flt(**filters), budget=budget, loaded=loaded
        )

    async def context_report(
        self,
        prompt: str | None = None,
        *,
        budget: int | None = None,
        loaded: str | None = None,
        **filters: Unpack[ContextFilters],
    ) -> ContextReport:
        """:meth:`context` with how it was composed: the block, its two parts, the tokens
        used, each section with its tokens and items (each item's score and why it is
        there) and the search hits left out below ``relevance_threshold``."""
        known("context_report", filters, CONTEXT)
        return await self.service.context.context_report(
            prompt, self._flt(**filters), budget=budget, loaded=loaded
        )

    async def clear(
        self, *, owner: str | None = None, namespace: str | None = None, type: Any = None
    ) -> int:
        """Hard-delete every memory of the namespace (or of one user / type); returns how many."""
        flt = self._flt(namespace=namespace, owner_user=owner, type=type)
        return await self.service.memories.clear(flt)

    async def count(
        self,
        *,
        user: str | None = None,
        owner: str | None = None,
        namespace: str | None = None,
        type: Any = None,
        include_forgotten: bool = False,
    ) -> int:
        """How many memories match."""
        flt = self._flt(
            namespace=namespace,
            user=user,
            owner_user=owner,
            type=type,
            include_forgotten=include_forgotten,
        )
        return await self.service.memories.count(flt)

    async def remember(self, /, content: str, **options: Unpack[RememberOptions]) -> WriteResult:
        """Store a fact; see :meth:`~memloci.service.memories.Memories.remember` for the options."""
        known("remember", options, OPTIONS["remember"])
        return await self.service.memories.remember(content, **options)

    async def update(
        self, /, memory_id: str, content: str | None = None, **options: Unpack[UpdateOptions]
    ) -> WriteResult:
        """Change a memory: same id, new version."""
        known("update", options, OPTIONS["update"])
        return await self.service.edits.update(memory_id, content, **options)

    async def correct(
        self, /, memory_id: str, content: str, **options: Unpack[CorrectOptions]
    ) -> WriteResult:
        """Replace a fact by a new one that supersedes it."""
        known("correct", options, OPTIONS["correct"])
        return await self.service.edits.correct(memory_id, content, **options)

    async def confirm(self, memory_id: str, *, namespace: str | None = None) -> WriteResult:
        return await self.service.edits.confirm(memory_id, namespace=namespace)

    async def forget(self, memory_id: str, *, namespace: str | None = None) -> WriteResult:
        return await self.service.edits.forget(memory_id, namespace=namespace)

    async def purge(self, memory_id: str, *, namespace: str | None = None) -> None:
        await self.service.memories.purge(memory_id, namespace=namespace)

    async def forget_user(self, user: str, *, namespace: str | None = None) -> ForgetReport:
        """Forget a person: every memory, version, vector, edge, entity only they mention,
        thread, identifier and consolidation state of ``user`` (and of users merged into
        them) in one transaction, then the files are scrubbed of their text (without
        waiting for other connections' reads: ``scrubbed=False`` and ``scrub_reason``
        when one held an old snapshot). Returns counts per kind; see
        :meth:`~memloci.service.privacy.Privacy.forget_user`."""
        return await self.service.privacy.forget_user(user, namespace=namespace)

    async def get(self, memory_id: str, *, namespace: str | None = None) -> MemoryNode:
        return await self.service.memories.get(memory_id, namespace=namespace)

    async def history(self, memory_id: str, *, namespace: str | None = None) -> list[MemoryVersion]:
        return await self.service.memories.history(memory_id, namespace=namespace)

    async def lookup(self, /, key: str, **options: Unpack[LookupOptions]) -> MemoryNode | None:
        """The fact under ``key``, walking session → user → agent → global."""
        known("lookup", options, OPTIONS["lookup"])
        return await self.service.memories.lookup(key, **options)

    async def learn_procedure(
        self, /, content: str, **options: Unpack[ProcedureOptions]
    ) -> WriteResult:
        """A standing instruction, or with ``triggers={"goal_contains": [...]}`` one for
        the goals that mention those words; see
        :meth:`~memloci.service.memories.Memories.learn_procedure`."""
        known("learn_procedure", options, OPTIONS["learn_procedure"])
        return await self.service.memories.learn_procedure(content, **options)

    async def record_episode(
        self, /, content: str, **options: Unpack[EpisodeOptions]
    ) -> WriteResult:
        known("record_episode", options, OPTIONS["record_episode"])
        return await self.service.memories.record_episode(content, **options)

    async def record_procedure_use(
        self, /, memory_id: str, **options: Unpack[ProcedureUseOptions]
    ) -> MemoryNode:
        """Count one use of a procedure (``success=``, ``duration_ms=`` when known)."""
        known("record_procedure_use", options, OPTIONS["record_procedure_use"])
        return await self.service.memories.record_procedure_use(memory_id, **options)

    async def explain(self, memory_id: str, *, namespace: str | None = None) -> Explanation:
        """Where a memory comes from: its versions, what it supersedes and what superseded
        it, the episodes it was derived from, its entities and edges."""
        return await self.service.records.explain(memory_id, namespace=namespace)

    async def weak_facts(
        self,
        *,
        user: str | None = None,
        namespace: str | None = None,
        limit: int = 20,
        threshold: float = 0.3,
    ) -> list[tuple[MemoryNode, float]]:
        """Current facts (visible to ``user``, if given) that are fading: retention below
        ``threshold``, weakest first, as ``(memory, retention)`` pairs."""
        return await self.service.records.weak_facts(
            namespace=namespace, user=user, limit=limit, threshold=threshold
        )

    async def end_session(self, session: str, *, namespace: str | None = None) -> Consolidated:
        """The session is over: consolidate its episodes into facts now."""
        return await self.service.consolidation.end_session(session, namespace=namespace)

    async def consolidate(
        self, session: str | None = None, *, user: str | None = None, namespace: str | None = None
    ) -> Consolidated:
        """Episodes into facts: one session, or every pending one (of ``user``)."""
        return await self.service.consolidation.consolidate(session, namespace=namespace, user=user)

    async def maintain(self) -> Maintained:
        """The nightly job now: consolidate, decay, enrich, infer causes, embed."""
        return await self.service.consolidation.maintain()

    async def stats(self, namespace: str | Sequence[str] | None = None) -> StoreStats:
        nss = [namespace] if isinstance(namespace, str) else namespace
        return await self.service.memories.stats(nss)

    async def export(self, path: str, *, namespace: str | None = None) -> int:
        """Write the namespace to a JSON Lines file; returns the number of lines."""
        from memloci.service.transfer import write_lines

        return await asyncio.to_thread(
            write_lines, path, self.service.admin.export_lines(namespace)
        )

    async def import_file(
        self,
        path: str,
        *,
        namespace: str | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> ImportReport:
        """Read an export — JSON Lines (the full backup) or a JSON array of memories
        (``memloci memory export -o file.json``) — validated whole before anything is
        written."""

        from memloci.service.transfer import read_lines

        lines = await asyncio.to_thread(read_lines, path)
        return await self.service.admin.import_lines(lines, namespace, progress)

    async def embed_pending(self, progress: Callable[[int], None] | None = None) -> int:
        """Embed everything that is waiting now (e.g. after ``reembed=True``), with progress."""
        return await self.service.admin.embed_pending(progress)

    async def reembed_knowledge(self, progress: KnowledgeProgress | None = None) -> int:
        """Embed the knowledge chunks of another model (or of none) with this embedder,
        e.g. after ``reembed=True``; ``progress(done, total)`` counts chunks."""
        return await self.service.knowledge.reembed_knowledge(progress=progress)

    async def add_knowledge(
        self, paths: PathLike | Sequence[PathLike], **options: Unpack[KnowledgeAddOptions]
    ) -> KnowledgeReport:
        """Add files / folders to the read-only knowledge tier (chunked and embedded), in
        ``collection`` (default ``default``).

        Folders are walked for ``glob`` (default ``*.md``, ``*.txt``, ``*.rst``); an
        unchanged file is skipped, a changed one replaced. ``progress(done, total)``
        counts chunks.
        """
        known("add_knowledge", options, OPTIONS["add_knowledge"])
        return await self.service.knowledge.add_knowledge(paths, **options)

    async def search_knowledge(
        self, query: str, **options: Unpack[KnowledgeSearchOptions]
    ) -> list[KnowledgeHit]:
        """The best knowledge chunks for ``query`` with a score ≥ ``threshold`` (cosine
        similarity; full-text relevance in 0–1 without an embedder), best first: at most
        ``limit`` (5), ``threshold`` 0.3 unless given; ``collections`` names the knowledge
        bases to search (default: all)."""
        known("search_knowledge", options, OPTIONS["search_knowledge"])
        return await self.service.knowledge.search_knowledge(query, **options)

    async def flush(self, timeout: float | None = None) -> bool:
        """Wait until every memory has its embedding (False on timeout)."""
        return await self.service.flush(timeout)

    async def identify_user(
        self,
        payload: Mapping[str, Any],
        *,
        namespace: str | None = None,
        new_conversation: bool | None = None,
    ) -> UserContext:
        """The memory user a trigger payload names (created when new) with their facts,
        recent episodes and preferences; see :func:`memloci.runtime.identify_user`."""
        from memloci.runtime.identify import identify_user

        return await identify_user(
            self.service, payload, namespace=namespace, new_conversation=new_conversation
        )

    def conversation(
        self, *, user: str, **options: Unpack[ConversationOptions]
    ) -> ConversationMemory:
        """Short-term memory of one conversation (user + chat + agent): sessions saved
        every turn, resume, window, summary; see :class:`memloci.runtime.ConversationMemory`."""
        from memloci.runtime.conversation import ConversationMemory

        return ConversationMemory(self.service, user=user, **options)

    async def aclose(self) -> None:
        """Finish background embedding and close the store."""
        await asyncio.to_thread(self.service.close)

    async def close(self) -> None:
        """The same as :meth:`aclose` (``await memory.close()``)."""
        await self.aclose()

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def list(  # defined last: the name shadows the builtin in the class body
        self,
        *,
        user: str | None = None,
        agent: str | None = None,
        session: str | None = None,
        namespace: str | Sequence[str] | None = None,
        type: Any = None,
        category: Any = None,
        scope: Any = None,
        after: str | datetime | None = None,
        before: str | datetime | None = None,
        include_forgotten: bool = False,
        owner: str | None = None,
        limit: int = 50,
        offset: int = 0,
        order: str = "created",
    ) -> list[MemoryNode]:
        """Memories matching the filters (current ones unless ``include_forgotten``).

        ``user`` is who is asking (their memories plus shared ones); ``owner`` keeps only
        memories recorded for exactly that user.
        """
        flt = self._flt(
            namespace=namespace,
            user=user,
            agent=agent,
            session=session,
            type=type,
            category=category,
            scope=scope,
            after=after,
            before=before,
            include_forgotten=include_forgotten,
            owner_user=owner,
        )
        return await self.service.memories.list_nodes(flt, limit=limit, offset=offset, order=order)


def _sync(
    method: Callable[Concatenate[AsyncMemory, P], Coroutine[Any, Any, T]],
) -> Callable[Concatenate[Memory, P], T]:
    def call(self: Memory, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return self._call(method(self._async, *args, **kwargs))

    call.__name__ = method.__name__
    call.__qualname__ = f"Memory.{method.__name__}"
    call.__doc__ = method.__doc__
    call.__wrapped__ = method  # type: ignore[attr-defined]  # help() shows its parameters
    return call


class Memory:
    """Long-term memory for an agent (sync). Same arguments and methods as
    :class:`AsyncMemory`; ``Memory()`` opens ``./memloci.db``."""

    def __init__(self, path: str | os.PathLike[str] | None = None, **kwargs: Any) -> None:
        self._close_lock = threading.Lock()  # one close() at a time; the others wait
        self._loop = LoopThread()
        try:
            self._async = self._call(_build(path, kwargs))
        except BaseException:
            self._stop_loop()
            raise
        self.service = self._async.service
        self.settings = self._async.settings
        self._tools: SyncTools | None = None

    @property
    def tools(self) -> SyncTools:
        """The agent tools: ``memory.tools.call(name, arguments)``, or bound to a caller
        with ``memory.tools(user=…, agent=…, session=…)``; ``call`` never raises."""
        if self._tools is None:  # built on first use (the tool definitions load then)
            from memloci.sdk_tools import SyncTools

            self._tools = SyncTools(self._async.tools, self._call)
        return self._tools

    def _call(self, coro: Coroutine[Any, Any, T]) -> T:
        return self._loop.call(coro)

    def _stop_loop(self) -> None:
        self._loop.stop()

    def add(
        self, content: str | Sequence[Mapping[str, Any]], **turn: Unpack[TurnOptions]
    ) -> MemoryNode | list[MemoryNode]:
        # The hot path: runs in the calling thread, one short transaction, no LLM, no
        # embedding (that follows in the background).
        known("add", turn, TURN)
        nodes = self.service.memories.add.now(content, **turn)
        return nodes[0] if isinstance(content, str) else nodes

    add.__doc__ = AsyncMemory.add.__doc__

    def search(
        self, query: str, *, k: int = 10, recipe: str = "hybrid", **filters: Unpack[SearchFilters]
    ) -> list[SearchHit]:
        known("search", filters, SEARCH)
        return self.service.memories.search.now(
            query, self._async._flt(**filters), k=k, recipe=recipe
        )

    def context(
        self,
        prompt: str | None = None,
        *,
        budget: int | None = None,
        **filters: Unpack[ContextFilters],
    ) -> str:
        known("context", filters, CONTEXT)
        return self.service.context.context.now(prompt, self._async._flt(**filters), budget=budget)

    def context_parts(
        self,
        prompt: str | None = None,
        *,
        budget: int | None = None,
        loaded: str | None = None,
        **filters: Unpack[ContextFilters],
    ) -> tuple[str, str]:
        known("context_parts", filters, CONTEXT)
        flt = self._async._flt(**filters)
        return self.service.context.context_parts.now(prompt, flt, budget=budget, loaded=loaded)

    context_parts.__doc__ = AsyncMemory.context_parts.__doc__

    def context_report(
        self,
        prompt: str | None = None,
        *,
        budget: int | None = None,
        loaded: str | None = None,
        **filters: Unpack[ContextFilters],
    ) -> ContextReport:
        known("context_report", filters, CONTEXT)
        flt = self._async._flt(**filters)
        return self.service.context.context_report.now(prompt, flt, budget=budget, loaded=loaded)

    context_report.__doc__ = AsyncMemory.context_report.__doc__

    def search_knowledge(
        self, query: str, **options: Unpack[KnowledgeSearchOptions]
    ) -> list[KnowledgeHit]:
        known("search_knowledge", options, OPTIONS["search_knowledge"])
        return self.service.knowledge.search_knowledge.now(query, **options)

    search_knowledge.__doc__ = AsyncMemory.search_knowledge.__doc__

    list = _sync(AsyncMemory.list)
    search.__doc__ = AsyncMemory.search.__doc__
    context.__doc__ = AsyncMemory.context.__doc__
    remember = _sync(AsyncMemory.remember)
    update = _sync(AsyncMemory.update)
    correct = _sync(AsyncMemory.correct)
    confirm = _sync(AsyncMemory.confirm)
    forget = _sync(AsyncMemory.forget)
    purge = _sync(AsyncMemory.purge)
    forget_user = _sync(AsyncMemory.forget_user)
    get = _sync(AsyncMemory.get)
    history = _sync(AsyncMemory.history)
    lookup = _sync(AsyncMemory.lookup)
    learn_procedure = _sync(AsyncMemory.learn_procedure)
    record_episode = _sync(AsyncMemory.record_episode)
    record_procedure_use = _sync(AsyncMemory.record_procedure_use)
    explain = _sync(AsyncMemory.explain)
    end_session = _sync(AsyncMemory.end_session)
    consolidate = _sync(AsyncMemory.consolidate)
    maintain = _sync(AsyncMemory.maintain)
    weak_facts = _sync(AsyncMemory.weak_facts)
    stats = _sync(AsyncMemory.stats)
    flush = _sync(AsyncMemory.flush)
    export = _sync(AsyncMemory.export)
    clear = _sync(AsyncMemory.clear)
    count = _sync(AsyncMemory.count)
    import_file = _sync(AsyncMemory.import_file)
    embed_pending = _sync(AsyncMemory.embed_pending)
    reembed_knowledge = _sync(AsyncMemory.reembed_knowledge)
    add_knowledge = _sync(AsyncMemory.add_knowledge)

    identify_user = _sync(AsyncMemory.identify_user)

    def conversation(
        self, *, user: str, **options: Unpack[ConversationOptions]
    ) -> SyncConversation:
        from memloci.runtime.conversation import SyncConversation

        return SyncConversation(self._async.conversation(user=user, **options), self._call)

    conversation.__doc__ = AsyncMemory.conversation.__doc__

    def close(self) -> None:
        """Finish background embedding and close the store (again, or from several
        threads at once: the first closes, the others wait for it)."""
        with self._close_lock:
            if self._loop.stopped:
                return
            try:
                self._call(self._async.aclose())
            finally:
                self._stop_loop()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


async def _build(path: str | os.PathLike[str] | None, kwargs: dict[str, Any]) -> AsyncMemory:
    return AsyncMemory(path, **kwargs)
