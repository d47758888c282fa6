"""The agent loop (layer: runtime): a role, a user and a chat model with memory tools.

What ``memloci chat role.yaml`` runs, usable by any front end::

    agent = Agent(service, role, load_chat_model(spec.provider, **spec.options), user="sam")
    await agent.start(resume=False)
    reply = await agent.ask("Remember that Alec is my boss")
    await agent.finish()              # end of the session: prune, maybe consolidate

Each turn: identify the user (``identify_user``), build the system prompt — the role's
prompt, how to use memory, who the user is, then ``service.context.context(...)`` (procedures
as standing instructions, "Your Memory" with ``[id:…]`` handles, entity profiles,
timeline) and the knowledge block (chunks above ``similarityThreshold``) — add the
conversation window, and call the model with the memory tools. Tool calls run through
:class:`~memloci.tools.Tools`, bound to the role's namespace, the agent and the user,
until the model answers in text (at most ``max_tool_rounds`` rounds). The user's
message and the answer are checkpointed at once (``--resume`` restores them).

A role without a ``memory:`` block has no memory at all (memory is opt-in): no user is
registered, nothing is read or written, the conversation lives in this process only
(``start(resume=True)`` is refused), and the model gets no memory tools and no memory
block — :attr:`Agent.has_memory` is False.

Procedure performance (so that a procedure's track record shows whether it works):
after each turn, every learned procedure the turn
applied — its trigger matched the message, or the answer cites its ``[id:…]`` — gets one
use recorded with the turn's duration, a success unless the turn stopped without an
answer (:meth:`Agent.record_procedures`); the model can report a use itself with the
``record_procedure_use`` tool, and such a procedure is not counted twice.

Memory never breaks the conversation: a failing context, identification, checkpoint,
episode or consolidation is reported on stderr and the turn goes on. Model failures
raise :class:`~memloci.errors.ProviderError` (nothing of the turn is recorded).

When the session ends (:meth:`Agent.finish`): an autonomous run (``memloci run``, see
``autonomous.py``; ``memloci chat -p``) records an episode of category ``autonomous_run``
(``episodic.auto_capture``; interactive sessions do not), and consolidation of at most
``max_episodes_per_run`` episodes runs when ``consolidation.interval`` says so:
``after_session`` always, ``after_autonomous`` after autonomous runs, ``manual`` never.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import re
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from memloci import validate as v
from memloci.config import Settings
from memloci.errors import MemlociError, ValidationError
from memloci.models import TURN_MAX, EpisodeDetails, MemoryNode, NodeType, ThreadMessage, utcnow
from memloci.procedures import matching
from memloci.providers.chat import CHAT_PROVIDERS, ChatModel, ToolCall
from memloci.providers.llm import LLM
from memloci.runtime.conversation import (
    ConversationMemory,
    ConversationWindow,
    llm_summarizer,
    new_session_id,
)
from memloci.runtime.identify import UserContext, identify_user
from memloci.runtime.role import MemoryConfig, Role
from memloci.service.documents import knowledge_block
from memloci.tools import TOOLS, Tools

if TYPE_CHECKING:
    from memloci.consolidation.consolidator import ConsolidationReport
    from memloci.service import MemoryService

logger = logging.getLogger("memloci.runtime")

MAX_TOOL_ROUNDS = 8
#: The tools the agent is offered (aliases such as ``search_memory`` are accepted too).
AGENT_TOOLS = (
    "recall",
    "remember",
    "add_to_memory",
    "update_memory",
    "correct_fact",
    "confirm_fact",
    "forget",
    "list_memories",
    "learn_procedure",
    "record_procedure_use",
    "record_episode",
    "get_entity_info",
    "explain_fact",
    "memory_stats",
    "weak_facts",
)
FACT_TOOLS = frozenset(
    {
        "remember",
        "remember_fact",
        "add_to_memory",
        "update_memory",
        "correct_fact",
        "confirm_fact",
        "weak_facts",
    }
)
KEY_ENVS = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
MODEL_OPTIONS = ("model", "base_url", "api_key_env", "timeout", "max_retries")
STOPPED = "(Stopped: {n} rounds of memory tool calls without an answer. Please ask again.)"
CITED = re.compile(r"\[id:([A-Za-z0-9]{8})\]")
REPORTED = re.compile(r"(?:\[?id:)?([A-Za-z0-9]{8})\]?")
REPORT_TOOL = "record_procedure_use"


def memory_guidance(tools: list[str]) -> str:
    """How to use memory, naming only the tools the agent was given ("" without any)."""
    if not tools:
        return ""
    have = set(tools)
    lines = ["## Using your memory", ""]
    if have & {"remember", "add_to_memory"}:
        lines.append(
            'You have long-term memory tools; "Your Memory" below lists what you know, each '
            "with an [id:…] handle."
        )
        lines.append(
            "- New information worth keeping (people, preferences, recurring context): "
            "briefly ask whether to remember it, and store it (add_to_memory) only once the "
            'user agrees. An explicit request ("remember that…", "from now on…") needs no '
            "question."
        )
        lines.append("- If the user declines, store nothing.")
    else:
        lines.append("You have long-term memory tools to look up what you learned before.")
    if "update_memory" in have:
        lines.append(
            "- Information that changed: update the existing memory (update_memory with its "
            "id) without asking, rather than adding a conflicting one."
        )
    if have & {"remember", "add_to_memory", "record_episode", "learn_procedure"}:
        lines.append("- Do not store transient or task-specific details.")
    if "recall" in have:
        lines.append(
            "- Search your memory (recall) before answering questions about the user or past work."
        )
    return "\n".join(lines)


MEMORY_GUIDANCE = memory_guidance(list(AGENT_TOOLS))  # every tool given (the default)


# ---------------------------------------------------------------------- configuration
def agent_tools(memory: MemoryConfig | None) -> list[str]:
    """The tools offered to an agent with this ``memory`` section: none without memory
    or with every long-term tier off; no fact tools (writing, ``forget``) when facts are
    off, no ``record_episode`` when episodes are off, no ``learn_procedure`` when
    procedures are off (nor ``record_procedure_use``)."""
    if memory is None or not memory_types(memory):
        return []
    off: set[str] = set()
    if not memory.semantic_enabled:
        off |= FACT_TOOLS | {"forget"}
    if not memory.episodic.enabled:
        off.add("record_episode")
    if not memory.procedural.enabled:
        off |= {"learn_procedure", "record_procedure_use"}
    return [name for name in AGENT_TOOLS if name not in off]


def memory_types(memory: MemoryConfig | None) -> tuple[NodeType, ...]:
    """The memory types an agent's tools and prompt may use: its enabled tiers."""
    if memory is None:
        return ()
    out: list[NodeType] = []
    if memory.semantic_enabled:
        out += [NodeType.SEMANTIC, NodeType.OPINION]
    if memory.episodic.enabled:
        out.append(NodeType.EPISODIC)
    if memory.procedural.enabled:
        out.append(NodeType.PROCEDURAL)
    return tuple(out)


def tool_specs(names: list[str]) -> list[dict[str, Any]]:
    """``{"name", "description", "parameters"}`` for the chat clients (the schemas of
    :func:`memloci.tools.openai_tools` / :func:`~memloci.tools.anthropic_tools`)."""
    return [
        {"name": n, "description": TOOLS[n].description, "parameters": TOOLS[n].parameters()}
        for n in names
    ]


@dataclass(frozen=True)
class ModelSpec:
    """Which chat model to use: ``provider`` and client ``options`` (``model``,
    ``base_url``, ``api_key_env`` …), with the role's sampling settings."""

    provider: str
    options: dict[str, Any]
    temperature: float = 0.7
    max_tokens: int = 1024

    @property
    def label(self) -> str:
        return f"{self.provider}:{self.options.get('model', 'default')}"


def no_model_error(source: str = "role.yaml") -> ValidationError:
    return ValidationError(
        f"{source} names no chat model, and MEMLOCI_LLM does not name one either",
        hint=f"add to {source}:  model: {{provider: openai, name: gpt-4o-mini}}  "
        "(or provider: anthropic, name: claude-haiku-4-5; add base_url: for a local "
        "OpenAI-compatible server such as Ollama) and set the API key in OPENAI_API_KEY "
        "(ANTHROPIC_API_KEY for anthropic; model.api_key_env names another variable). "
        'Or set MEMLOCI_LLM=openai and MEMLOCI_LLM_OPTIONS=\'{"model": "gpt-4o-mini"}\'',
    )


def model_spec(
    role: Role, settings: Settings | None = None, *, source: str = "role.yaml"
) -> ModelSpec:
    """The chat model of ``role`` (its ``model:`` block), else the one ``settings``
    names (``MEMLOCI_LLM`` + ``MEMLOCI_LLM_OPTIONS``). Raises ValidationError saying
    what to set when there is none, or when the provider's own endpoint is used and its
    API key variable is empty (a ``base_url`` server may need no key)."""
    if role.model is not None:
        m = role.model
        options: dict[str, Any] = {"model": m.name}
        keys = ("base_url", "api_key_env", "system_as_user")
        options.update({k: getattr(m, k) for k in keys if getattr(m, k)})
        spec = ModelSpec(m.provider, options, m.temperature, m.max_tokens)
        where = f"model.api_key_env in {source}"
    else:
        env = settings if settings is not None else Settings()
        if env.llm not in CHAT_PROVIDERS:
            raise no_model_error(source)
        options = {k: val for k, val in env.llm_options.items() if k in MODEL_OPTIONS}
        spec, where = ModelSpec(env.llm, options), '"api_key_env" in MEMLOCI_LLM_OPTIONS'
    key_env = str(spec.options.get("api_key_env") or KEY_ENVS[spec.provider])
    if not spec.options.get("base_url") and not os.environ.get(key_env):
        raise ValidationError(
            f"the chat model {spec.label} needs an API key: set {key_env}",
            hint=f"export {key_env}=…  (or name another variable with {where}; a local "
            "server given as model.base_url needs no key)",
        )
    return spec


def no_memory_error(agent: str, what: str) -> ValidationError:
    """The usage error for asking an agent without memory for something memory keeps."""
    return ValidationError(
        f"agent {agent!r} has no memory: {what}",
        hint="its role file has no memory: block, so nothing is stored or resumed; add "
        "one to give it memory (memory: {} turns every tier on with the defaults)",
    )


# ---------------------------------------------------------------------- results
@dataclass(frozen=True)
class ToolRun:
    """One tool call the model made and the text it got back."""

    name: str
    arguments: dict[str, Any]
    result: str

    @property
    def ok(self) -> bool:
        return not self.result.startswith("Error:")


@dataclass(frozen=True)
class Reply:
    """The answer to one message; ``local`` when it was a command answered without
    the model (``/memory``)."""

    text: str
    tools: tuple[ToolRun, ...] = ()
    local: bool = False


@dataclass
class _Turn:
    prompt: str
    answer: str
    tools: tuple[ToolRun, ...]


#: ``commands(text, agent)`` answers a command without the model, or returns None.
CommandHandler = Callable[[str, "Agent"], Awaitable[str | None]]


class _Conversation(Protocol):
    session: str | None
    resumed: bool

    async def start(self, *, resume: bool = False) -> str: ...
    async def record(self, role: str, content: str) -> bool: ...
    async def end(self) -> None: ...
    def window(self) -> ConversationWindow: ...


class _Scratch:
    """The window of a role whose conversation tier is off: this process only."""

    def __init__(self, system_prompt: str, window: int) -> None:
        self.system_prompt, self.size = system_prompt, window
        self.session: str | None = None
        self.resumed = False
        self._messages: list[ThreadMessage] = []

    async def start(self, *, resume: bool = False) -> str:
        self.session = new_session_id()
        return self.session

    async def record(self, role: str, content: str) -> bool:
        self._messages.append(ThreadMessage(role=role, content=content, created_at=utcnow()))
        return False

    async def end(self) -> None:
        return None

    def window(self) -> ConversationWindow:
        return ConversationWindow(tuple(self._messages[-self.size :]), None, self.system_prompt)


# ---------------------------------------------------------------------- the agent
class Agent:
    """One role talking with one user through ``model``; see the module docstring.

    ``user`` is the user's id on ``channel`` (the memory user of that id is created
    when new, so ``--user sam`` is memory user ``sam``). ``commands`` answers messages
    such as ``/memory`` without the model; ``on_tool`` sees every tool call;
    ``warn`` receives the one-line reports of memory failures (default: stderr)."""

    def __init__(
        self,
        service: MemoryService,
        role: Role,
        model: ChatModel,
        *,
        user: str,
        channel: str = "cli",
        chat: str | None = None,
        commands: CommandHandler | None = None,
        on_tool: Callable[[ToolRun], None] | None = None,
        warn: Callable[[str], None] | None = None,
        max_tool_rounds: int = MAX_TOOL_ROUNDS,
    ) -> None:
        self.service, self.role, self.model = service, role, model
        self.login = v.required(user, "user")
        self.user = self.login
        self.channel, self.chat = v.name(channel, "channel", 50), v.ident(chat, "chat")
        self.namespace = v.namespace(role.namespace)
        self.commands, self.on_tool = commands, on_tool
        self.warn = warn or (lambda line: print(line, file=sys.stderr))
        self.max_tool_rounds = v.limit(max_tool_rounds, "max_tool_rounds", 100)
        self.has_memory = role.memory is not None
        self.tool_names = agent_tools(role.memory)
        self._specs = tool_specs(self.tool_names)
        self._allowed = {n for n, t in TOOLS.items() if (t.alias_of or n) in self.tool_names}
        self._allowed |= set(self.tool_names)
        self.conversation: _Conversation | None = None
        self.tools: Tools | None = None
        self.user_context: UserContext | None = None
        self.failures = 0
        self._registered = False
        self._turns: list[_Turn] = []
        self._started = utcnow()
        self._clock = time.monotonic()
        self._loaded: tuple[str, str] | None = None  # (who, memory): fixed for a conversation
        self.trigger: dict[str, Any] | None = None  # what started an autonomous run
        self.outcome: dict[str, Any] | None = None  # how it ended (autonomous.py)

    @property
    def session(self) -> str | None:
        return self.conversation.session if self.conversation is not None else None

    @property
    def turns(self) -> list[_Turn]:
        return self._turns

    @property
    def started(self) -> Any:
        return self._started

    @property
    def clock(self) -> float:
        return self._clock

    def record_turn(self, prompt: str, answer: str, runs: tuple[ToolRun, ...]) -> None:
        self._turns.append(_Turn(prompt, answer, runs))

    # ------------------------------------------------------------------ lifecycle
    async def start(self, *, resume: bool = False) -> str:
        """Identify the user and begin a session (``resume``: the latest one, with its
        last messages); returns the session id. An agent without memory registers no
        user and keeps its conversation in this process; ``resume`` is then refused."""
        mem = self.role.memory
        if mem is None:
            if resume:
                raise no_memory_error(self.role.name, "there is no saved conversation to resume")
            self.conversation = _Scratch(self.role.system_prompt, MemoryConfig().window_size)
            session = await self.conversation.start()
            self._started, self._clock, self._turns = utcnow(), time.monotonic(), []
            self.outcome, self._loaded = None, None
            return session
        self.user = await self._identify(new_conversation=True)
        if mem.conversation.enabled:
            summarize = None
            if mem.conversation.summarize and isinstance(self.model, LLM):
                summarize = llm_summarizer(self.model)
            self.conversation = ConversationMemory(
                self.service,
                user=self.user,
                chat=self.chat,
                agent=self.role.name,
                namespace=self.namespace,
                summarize=summarize,
                system_prompt=self.role.system_prompt,
                **self.role.conversation_options(),
            )
        else:
            self.conversation = _Scratch(self.role.system_prompt, mem.window_size)
        session = await self.conversation.start(resume=resume)
        self._bind(session)
        await self._check_sources()
        self._started, self._clock, self._turns = utcnow(), time.monotonic(), []
        self.outcome = None
        self._loaded = None  # the memory block is loaded once per conversation
        return session

    async def _check_sources(self) -> None:
        """Say (once, at the start) which of the role's knowledge sources hold nothing in
        this namespace: a misspelt or never-added source is not silently ignored."""
        if self.role.memory is None:
            return
        kn = self.role.memory.knowledge
        if not kn.active:
            return
        try:
            known = await self.service.knowledge.list_knowledge_sources(namespace=self.namespace)
        except Exception as exc:
            self._report("list the knowledge sources", exc)
            return
        have = {k.collection for k in known}
        for name in kn.sources:
            if name not in have:
                self.warn(
                    f"memloci: knowledge source {name!r} has no documents in namespace "
                    f"{self.namespace!r}; add some with `memloci knowledge add PATH "
                    f"--collection {name} -n {self.namespace}`"
                )

    def _bind(self, session: str) -> None:
        self.tools = Tools(
            self.service,
            namespace=self.namespace,
            user=self.user,
            agent=self.role.name,
            session=session,
            types=memory_types(self.role.memory),
        )

    async def finish(
        self, *, autonomous: bool = False, consolidate: bool = True
    ) -> ConsolidationReport | None:
        """End the session: an autonomous run records its episode, the conversation
        thread is pruned, and consolidation runs when the role's interval says so
        (``consolidate=False`` skips it, e.g. after a failed run). Never raises."""
        if self.conversation is None:
            return None
        if autonomous and self._turns:
            await capture_episode(self)
        await self.conversation.end()
        cap = self.role.episodes_per_run(autonomous) if consolidate else None
        if cap is None:
            return None
        try:  # at most the role's max_episodes_per_run, oldest first: a bounded cost per run
            return await self.service.consolidation.consolidate(
                namespace=self.namespace, user=self.user, max_episodes=cap
            )
        except Exception as exc:
            self._report("consolidate this session's episodes", exc)
            return None

    # ------------------------------------------------------------------ a turn
    async def ask(self, text: str) -> Reply:
        """Answer one user message (commands locally, the rest through the model).
        Raises ProviderError when the model fails; then nothing is recorded."""
        if self.conversation is None:
            await self.start()
        assert self.conversation is not None
        text = v.turn(text)
        if self.commands is not None:
            local = await self.commands(text, self)
            if local is not None:
                return Reply(local, local=True)
        if self._turns and self.has_memory:
            user = await self._identify(new_conversation=False)
            if user != self.user and self.session is not None:  # merged meanwhile
                self.user = user
                self._bind(self.session)
        window = self.conversation.window()
        system = window.system(await self._context(text))
        history = [
            {"role": m.role, "content": m.content}
            for m in window.messages
            if m.role in ("user", "assistant")
        ]
        clock = time.monotonic()
        answer, runs = await self._loop(system, [*history, {"role": "user", "content": text}])
        await self.conversation.record("user", text)
        await self.conversation.record("assistant", answer or "(no answer)")
        self._turns.append(_Turn(text, answer, runs))
        stopped = answer == STOPPED.format(n=self.max_tool_rounds)
        await self.record_procedures(
            text, answer, runs, success=not stopped, duration_ms=_ms_since(clock)
        )
        return Reply(answer, runs)

    # ------------------------------------------------------------------ procedures
    async def record_procedures(
        self,
        goal: str,
        answer: str,
        runs: tuple[ToolRun, ...],
        *,
        success: bool,
        duration_ms: float,
    ) -> list[str]:
        """Count a use of each procedure this turn or run applied — its trigger matched
        ``goal``, or the model cited its ``[id:…]`` in ``answer`` — with the outcome and
        duration (the procedure's ``times_used``, ``success_rate``, ``avg_duration_ms``).
        A procedure the model reported itself (``record_procedure_use``) is not counted
        twice. Returns the ids counted; never raises."""
        mem = self.role.memory
        if mem is None or not mem.procedural.enabled or self.tools is None:
            return []
        reported = {
            m.group(1)
            for run in runs
            if run.name == REPORT_TOOL and run.ok
            if (m := REPORTED.fullmatch(str(run.arguments.get("memory_id", "")).strip()))
        }
        cited = set(CITED.findall(answer))
        try:
            known = await self._procedures()
            applied = [p.id for p in matching(known, goal)]
            applied += [p.id for p in known if p.id in cited and p.id not in applied]
            counted: list[str] = []
            for pid in applied:
                if pid in reported:
                    continue
                await self.service.memories.record_procedure_use(
                    pid, namespace=self.namespace, success=success, duration_ms=duration_ms
                )
                counted.append(pid)
        except Exception as exc:
            self._report("record the use of a procedure", exc)
            return []
        return counted

    async def _procedures(self) -> list[MemoryNode]:
        """The current procedures this agent may see (those the context block draws on)."""
        assert self.tools is not None
        flt = self.tools.bound.filter(type=NodeType.PROCEDURAL)
        return await self.service.memories.list_nodes(flt, limit=10_000, order="-created")

    async def _loop(
        self, system: str, messages: list[dict[str, Any]]
    ) -> tuple[str, tuple[ToolRun, ...]]:
        runs: list[ToolRun] = []
        cfg = self.role.model
        chat = functools.partial(
            self.model.chat,
            system=system or None,
            tools=self._specs,
            max_tokens=cfg.max_tokens if cfg else 1024,
            temperature=cfg.temperature if cfg else 0.7,
        )
        for _ in range(self.max_tool_rounds):
            turn = await asyncio.to_thread(chat, messages)
            if not turn.tool_calls:
                return turn.text.strip(), tuple(runs)
            messages.append(
                {"role": "assistant", "content": turn.text, "tool_calls": list(turn.tool_calls)}
            )
            for call in turn.tool_calls:
                run = await self._run_tool(call)
                runs.append(run)
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": call.id,
                        "name": call.name,
                        "content": run.result,
                        "is_error": not run.ok,
                    }
                )
        logger.warning("agent %s: no answer after %d tool rounds", self.role.name, len(runs))
        return STOPPED.format(n=self.max_tool_rounds), tuple(runs)

    async def _run_tool(self, call: ToolCall) -> ToolRun:
        if call.name not in self._allowed or self.tools is None:
            offered = ", ".join(self.tool_names) or "none"
            result = f"Error: tool {call.name!r} is not available to this agent. Tools: {offered}."
        else:
            result = await self.tools.call(call.name, call.arguments)
        run = ToolRun(call.name, call.input(), result)
        if self.on_tool is not None:
            self.on_tool(run)
        return run

    # ------------------------------------------------------------------ the prompt
    async def _context(self, text: str) -> str:
        """Guidance, the user and the memory block — loaded once per conversation, so the
        prompt's prefix stays byte-identical for the provider's prompt cache —
        then what this message brings up: relevant memories and knowledge."""
        parts = [memory_guidance(self.tool_names)]
        dynamic = ""
        mem = self.role.memory
        loaded = self._loaded
        if mem is not None:
            try:
                flt = self.service.filter(
                    namespace=self.namespace,
                    user=self.user,
                    agent=self.role.name,
                    session=self.session,
                )
                cacheable, dynamic = await self.service.context.context_parts(
                    text,
                    flt,
                    facts=mem.semantic_enabled,
                    procedures=mem.procedural.enabled,
                    episodes=mem.episodic.enabled,
                    loaded=loaded[1] if loaded else None,
                )
                if loaded is None:
                    loaded = self._loaded = (self._who(), cacheable)
            except Exception as exc:
                self._report("load the memory context", exc)
        parts += list(loaded) if loaded is not None else [self._who()]
        parts.append(dynamic)
        if mem is not None and mem.knowledge.active:
            kn = mem.knowledge
            try:
                hits = await self.service.knowledge.search_knowledge(
                    text[-v.QUERY_MAX :],
                    namespace=self.namespace,
                    collections=kn.sources,
                    limit=kn.retrieval_limit,
                    threshold=kn.similarity_threshold,
                )
                parts.append(knowledge_block(hits))
            except Exception as exc:
                self._report("search the knowledge sources", exc)
        return "\n\n".join(p.strip() for p in parts if p and p.strip())

    def _who(self) -> str:
        if self.user_context is None:
            return ""
        return self.user_context.model_copy(update={"facts": [], "episodes": []}).as_prompt()

    async def _identify(self, *, new_conversation: bool) -> str:
        """The memory user of ``login`` on ``channel`` (created as ``login`` when new)."""
        payload = {"channel": self.channel, "user_id": self.login}
        try:
            if not self._registered:
                known = await self.service.records.find_user(
                    self.channel, self.login, namespace=self.namespace
                )
                if known is None:
                    await self.service.records.save_user(
                        self.login,
                        namespace=self.namespace,
                        identifiers={self.channel: self.login},
                    )
                self._registered = True
            ctx = await identify_user(
                self.service,
                payload,
                namespace=self.namespace,
                new_conversation=new_conversation,
                facts_limit=1,
                episodes_limit=1,
            )
        except Exception as exc:
            self._report("identify the user", exc)
            return self.user
        self.user_context = ctx
        return ctx.user.id

    def _report(self, doing: str, exc: Exception) -> None:
        """Log and tell the user in one line; never raise."""
        self.failures += 1
        text = exc.message if isinstance(exc, MemlociError) else f"{type(exc).__name__}: {exc}"
        logger.warning(
            "agent %s: could not %s: %s",
            self.role.name,
            doing,
            text,
            exc_info=None if isinstance(exc, MemlociError) else exc,
        )
        self.warn(f"memloci: could not {doing} ({text}); continuing")


def _ms_since(clock: float) -> float:
    return round((time.monotonic() - clock) * 1000, 1)


def memory_command_handler(
    answer: Callable[..., Awaitable[str | None]],
) -> CommandHandler:
    """A :data:`CommandHandler` from ``answer_memory_command``-like functions
    ``answer(text, service, namespace=, user=, agent=)``."""

    async def handle(text: str, agent: Agent) -> str | None:
        return await answer(
            text,
            agent.service,
            namespace=agent.namespace,
            user=agent.user,
            agent=agent.role.name,
        )

    return handle


# the category of the episode an autonomous run (or ``chat -p``) records
CATEGORY = "autonomous_run"


async def capture_episode(agent: Agent) -> None:
    """What an autonomous run (or ``chat -p``) did, as one episode of category
    ``autonomous_run``: the ``finish_task`` summary (``Task:`` / ``Outcome:`` lines for
    several tasks), with the trigger in metadata. Never raises."""
    mem = agent.role.memory
    turns = agent.turns
    if not turns or mem is None or not (mem.episodic.enabled and mem.episodic.auto_capture):
        return
    if len(turns) == 1 and agent.outcome is not None:
        content = turns[0].answer
    else:
        content = "\n".join(f"Task: {t.prompt}\nOutcome: {t.answer}" for t in turns)
    if len(content) > TURN_MAX:
        content = content[: TURN_MAX - 1] + "…"
    trigger = dict(agent.trigger or {})
    outcome = agent.outcome or {"success": True, "final_output": turns[-1].answer[:2000]}
    details = EpisodeDetails(
        trigger={
            "channel": agent.channel,
            "mode": "autonomous",
            "agent": agent.role.name,
            **trigger,
        },
        conversation=[
            m
            for t in turns
            for m in (
                {"role": "user", "content": t.prompt},
                {"role": "assistant", "content": t.answer},
            )
        ],
        actions=[
            {"tool": r.name, "arguments": r.arguments, "result": r.result[:1000], "ok": r.ok}
            for t in turns
            for r in t.tools
        ],
        outcome=outcome,
        started_at=agent.started,
        ended_at=utcnow(),
        duration_ms=round((time.monotonic() - agent.clock) * 1000, 1),
    )
    try:
        await agent.service.memories.record_episode(
            content,
            namespace=agent.namespace,
            user=agent.user,
            agent=agent.role.name,
            session=agent.session,
            details=details,
            category=CATEGORY,
            metadata=trigger or None,
        )
    except Exception as exc:
        agent._report("record the run's episode", exc)


__all__ = [
    "AGENT_TOOLS",
    "CATEGORY",
    "MAX_TOOL_ROUNDS",
    "MEMORY_GUIDANCE",
    "Agent",
    "CommandHandler",
    "ModelSpec",
    "Reply",
    "ToolRun",
    "agent_tools",
    "capture_episode",
    "memory_command_handler",
    "model_spec",
    "no_memory_error",
    "no_model_error",
    "tool_specs",
]
