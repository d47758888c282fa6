"""An entity's profile (its summary) is embedded on its own, so a question about what
something is finds the entity whose profile says it, although the question names
nothing (reference 002: entity summaries are embedded). The profile then stands in the
context block's "People and Things"; a question about something else does not bring it.
"""

from __future__ import annotations

import asyncio
from typing import Any

from memloci import Memory
from memloci.consolidation.profiles import digest, profile_text
from memloci.models import EntityType
from memloci.storage.base import NodeFilter
from pgtest import both_backends

ATLAS = (
    "The billing platform: it charges customers' cards every month, sends the invoices "
    "and handles refunds"
)


def save(mem: Memory, name: str, **kwargs: object) -> str:
    entity = asyncio.run(mem.service.records.save_entity(name, **kwargs))  # type: ignore[arg-type]
    return entity.id


def test_a_question_about_what_something_does_finds_its_profile(make_memory: Any) -> None:
    mem = make_memory(embedder="local")
    atlas = save(mem, "Atlas", type=EntityType.PROJECT, summary=ATLAS)
    save(mem, "Juniper", type=EntityType.PROJECT, summary="The office plant watering rota")
    mem.remember("The user likes green tea", user="sam")
    mem.remember("The user's sister lives in Porto", user="sam")
    mem.flush()
    report = mem.context_report("Which of our systems sends customers their invoices?", user="sam")
    text = report.block
    assert "## People and Things" in text and "**Atlas**" in text
    assert "Juniper" not in text
    (item,) = [i for s in report.sections for i in s.items if "Atlas" in " ".join(i.lines)]
    assert "its profile matches the prompt" in item.why
    assert atlas  # an id was given
    other = mem.context("What should I cook for dinner tonight?", user="sam")
    assert "Atlas" not in other


@both_backends
def test_the_profile_vector_follows_the_summary(mem: Memory) -> None:
    store, ns = mem.service.store, "default"
    model = mem.service.embedder.model_id  # type: ignore[union-attr]
    atlas = save(mem, "Atlas", summary=ATLAS)
    bare = save(mem, "Zephyr")  # no summary: nothing to embed
    first = store.jobs.profile_vectors(ns, model)
    assert set(first) == {atlas}
    entity = store.entities.get_entity(ns, atlas)
    assert entity is not None and first[atlas][0] == digest(profile_text(entity))
    save(mem, "Atlas", summary="The payroll system", entity_id=atlas)  # a new summary
    second = store.jobs.profile_vectors(ns, model)
    assert second[atlas][0] != first[atlas][0] and second[atlas][1] != first[atlas][1]
    save(mem, "Atlas", type=EntityType.PROJECT, entity_id=atlas)  # summary unchanged
    assert store.jobs.profile_vectors(ns, model) == second
    assert bare not in store.jobs.profile_vectors(ns, model)


@both_backends
def test_maintain_embeds_profiles_written_without_a_vector(mem: Memory) -> None:
    """Enrichment (an LLM) writes summaries, and stores made before profiles had vectors
    hold some: ``maintain`` embeds them."""
    store, ns = mem.service.store, "default"
    model = mem.service.embedder.model_id  # type: ignore[union-attr]
    atlas = store.entities.get_entity(ns, save(mem, "Atlas"))
    assert atlas is not None
    store.entities.update_entity(atlas.model_copy(update={"summary": ATLAS}))  # as enrichment does
    assert store.jobs.profile_vectors(ns, model) == {}
    mem.maintain()
    assert set(store.jobs.profile_vectors(ns, model)) == {atlas.id}


def test_a_profile_drawn_from_memories_the_caller_cannot_see_is_not_matched(
    make_memory: Any,
) -> None:
    mem = make_memory(embedder="local")
    atlas = save(mem, "Atlas", type=EntityType.PROJECT, summary=ATLAS)
    theirs = mem.remember("Bob rebuilt Atlas last spring", user="bob").memory
    asyncio.run(mem.service.records.link_entities(theirs.id, [atlas]))
    mem.flush()
    ask = "Which of our systems sends customers their invoices?"
    assert "**Atlas**" in mem.context(ask, user="bob")  # bob sees every memory of it
    assert "Atlas" not in mem.context(ask, user="sam")  # sam does not: no profile
    flt = NodeFilter(namespaces=("default",), user="sam")
    assert mem.service.store.memories.list_nodes(flt, limit=10) == []
