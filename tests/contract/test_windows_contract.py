"""The Store contract for the neighbour windows of a turn's full-text row (see
``memloci.storage.windows``): a chat of short messages finds a message by the words of
the messages around it, a long turn's row holds one turn each way, and a turn edited or
removed is never found through another row — on any backend, through the protocol."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from memloci.migrate import copy_store
from memloci.models import MemoryNode, NodeType, Scope, short_id
from memloci.service.transfer import export_lines, import_lines
from memloci.storage.base import NodeFilter, NodePatch, Store
from memloci.storage.windows import WINDOW, SQLChain, carry

from .conftest import EMBED_DIM, EMBED_MODEL

T0 = datetime(2024, 1, 1, 12, 0, tzinfo=UTC)


def chat(store: Store, *said: tuple[str, str], session: str | None = "s1") -> list[str]:
    """Store the turns ``(speaker, text)`` of user u1 in order; their ids."""
    ids = []
    for i, (speaker, text) in enumerate(said):
        when = T0 + timedelta(minutes=i)
        node = MemoryNode(
            id=short_id(), namespace="default", type=NodeType.EPISODIC, content=text,
            scope=Scope.USER, user="u1", session=session, speaker=speaker,
            event_time=when, created_at=when, updated_at=when, valid_from=when,
        )  # fmt: skip
        ids.append(store.memories.insert_node(node, link_previous=True).id)
    return ids


def found(store: Store, word: str, namespace: str = "default") -> set[str]:
    mine = NodeFilter(namespaces=(namespace,), user="u1")
    return {i for i, _ in store.search.fulltext(mine, f'"{word}"', 50)}


SHORT = (
    ("Ana", "I started surfing five years ago."),
    ("Ana", "Love it."),
    ("Ana", "The ocean is so calming."),
    ("Bo", "Nice!"),
    (
        "Bo",
        "Where do you go these days? I have been meaning to try it myself for a while now,"
        " ever since my cousin took it up last summer.",
    ),
    ("Ana", "Mostly the north beach, early in the morning, when the water is flat and quiet."),
    ("Bo", "Sounds like a great way to start the day, I should join you one of these weekends."),
)


def test_short_messages_are_found_by_the_words_around_them(store: Store) -> None:
    ids = chat(store, *SHORT)
    # "Love it." is about surfing: found by it, as are the messages after it in reach
    assert ids[1] in found(store, "surfing") and ids[2] in found(store, "surfing")
    # and a message holds the ones after it too: "surfing" says what "Love it." loves
    assert ids[0] in found(store, "calming") and ids[1] in found(store, "calming")
    # a window holds the turns nearest first while it is shorter than WINDOW characters
    assert sum(len(t) for _, t in SHORT) > WINDOW  # so no row holds the whole chat
    assert ids[5] not in found(store, "surfing") and ids[6] not in found(store, "surfing")
    assert ids[4] in found(store, "beach") and ids[0] not in found(store, "beach")


def test_a_long_turn_is_the_whole_window_on_its_side(store: Store) -> None:
    long = "I spent the whole summer restoring an old sailboat with my uncle. " * 3
    ids = chat(store, ("Ana", "We talked about kayaks."), ("Ana", long), ("Bo", "Cool boat."))
    assert found(store, "kayaks") == {ids[0], ids[1]}  # not past the long turn
    assert found(store, "sailboat") == set(ids)
    assert found(store, "boat") == {ids[1], ids[2]}


def test_an_edited_turn_is_found_by_its_new_words_only(store: Store) -> None:
    ids = chat(store, *SHORT)
    store.memories.update_node(
        "default", ids[0], NodePatch(content="I started rowing five years ago.")
    )
    assert found(store, "surfing") == set()
    assert ids[1] in found(store, "rowing") and ids[2] in found(store, "rowing")


def test_a_removed_turn_is_found_through_no_other_row(store: Store) -> None:
    ids = chat(store, *SHORT)
    assert store.memories.purge_node("default", ids[2])
    assert found(store, "calming") == set()
    assert found(store, "ocean") == set()
    # the turns on either side no longer join across the gap
    assert ids[3] not in found(store, "surfing")
    assert ids[1] not in found(store, "nice")
    assert store.memories.clear("default", NodeFilter(namespaces=("default",), user="u1")) == 6
    assert found(store, "surfing") == set()


def test_a_forgotten_user_leaves_no_word_in_another_users_window(store: Store) -> None:
    """Windows hold only the chain's own turns — one owner's — so forgetting a user
    leaves nothing behind; the turns of another user of the session are untouched."""
    ids = chat(store, *SHORT)
    other = MemoryNode(
        id=short_id(), namespace="default", type=NodeType.EPISODIC, content="kites are fun",
        scope=Scope.USER, user="u2", session="s1", speaker="Cy",
        event_time=T0, created_at=T0, updated_at=T0, valid_from=T0,
    )  # fmt: skip
    store.memories.insert_node(other, link_previous=True)
    report = store.delete_user_data("default", "u1")
    assert report["memories"] == len(ids) and report["neighbours_blanked"] == 0
    theirs = NodeFilter(namespaces=("default",), user="u2")
    assert [i for i, _ in store.search.fulltext(theirs, '"kites"', 5)] == [other.id]
    assert store.search.fulltext(theirs, '"surfing"', 5) == []


def test_a_removed_tiny_message_is_found_through_no_other_row(store: Store) -> None:
    """Tiny messages ("ok", "lol") fit many to a window; removing one still reaches
    every window that held it."""
    ids = chat(store, *[("Ana" if i % 2 else "Bo", f"ok word{i}") for i in range(20)])
    assert len(found(store, "word10")) > 3
    assert store.memories.purge_node("default", ids[10])
    assert found(store, "word10") == set()


def test_a_message_that_says_nothing_is_passed_over(store: Store) -> None:
    """ "lol", "Thanks!", an emoji say nothing of their own: no window holds them, so
    they take no place in one, and the windows around them reach past them."""
    ids = chat(
        store,
        ("Ana", "I started surfing five years ago."),
        ("Bo", "lol"),
        ("Bo", "Thanks! \U0001f602"),
        ("Ana", "The ocean is so calming."),
    )
    assert found(store, "lol") == {ids[1]}  # its own row only
    assert found(store, "thanks") == {ids[2]}
    assert ids[3] in found(store, "surfing") and ids[0] in found(store, "calming")
    # a filler's own row still holds its neighbours (search discounts it, see fusion)
    assert ids[1] in found(store, "surfing") and ids[1] in found(store, "calming")


def test_a_removed_turn_is_found_through_no_row_past_a_run_of_fillers(store: Store) -> None:
    """Fillers are passed over, so a turn's words reach past any number of them; a
    change is carried through all of them."""
    fillers = [("Bo", "lol")] * 12
    ids = chat(store, ("Ana", "My pin is pineapple."), *fillers, ("Ana", "Anyway, hi."))
    assert found(store, "pineapple") == set(ids)
    store.memories.update_node("default", ids[0], NodePatch(content="My pin is mango."))
    assert found(store, "pineapple") == set()
    assert found(store, "mango") == set(ids)
    assert store.memories.purge_node("default", ids[0])
    assert found(store, "mango") == set()


LONG_CHAT = (
    *SHORT,
    ("Bo", "lol"),
    *[("Ana" if i % 2 else "Bo", f"ok word{i}") for i in range(12)],
    ("Ana", "I keep my board in the garage next to the kayak."),
)
WORDS = ("surfing", "calming", "ocean", "nice", "beach", "weekends", "word3", "word9", "kayak")


def texts_found(store: Store, namespace: str = "default") -> dict[str, list[str]]:
    """Which turns (by their text) each of :data:`WORDS` finds."""
    text = {n.id: n.content for n in store.memories.iter_nodes(namespace)}
    return {w: sorted(text[i] for i in found(store, w, namespace)) for w in WORDS}


def test_an_import_gives_the_turns_their_windows(store: Store) -> None:
    """An imported chat is found as the original is: its turns come unlinked and their
    temporal edges join their windows (here into another namespace, under new ids)."""
    chat(store, *LONG_CHAT)
    want = texts_found(store)
    assert len(want["surfing"]) > 1  # found through the windows
    lines = list(export_lines(store, "default"))
    import_lines(store, lines, "copy", embedding_model=EMBED_MODEL, dimension=EMBED_DIM)
    assert texts_found(store, "copy") == want


def test_a_migration_gives_the_turns_their_windows(store: Store, tmp_path: Path) -> None:
    from memloci.storage.sqlite import SQLiteStore

    source = SQLiteStore(str(tmp_path / "source.db"))
    try:
        source.bind_embedder(EMBED_MODEL, EMBED_DIM)
        chat(source, *LONG_CHAT)
        want = texts_found(source)
        copy_store(source, store)
    finally:
        source.close()
    assert texts_found(store) == want


def test_an_added_turn_leaves_every_window_settled(store: Store) -> None:
    """An add reads the turns before it in one query and writes the windows it changes
    in one batch: every window comes out as the step-by-step walk makes it — a walk
    from any turn finds nothing left to change — past runs of fillers longer than the
    query reads (the walk then reads on)."""
    fillers = [("Bo", "lol")] * 9
    ids = chat(store, *SHORT[:3], *fillers, *LONG_CHAT[7:], *fillers, ("Ana", "ok then"))
    with store.db.tx() as c:  # type: ignore[attr-defined]
        chain = SQLChain(c, "default", store.db.dialect.ph)  # type: ignore[attr-defined]
        assert [carry(chain, i, side) for i in ids for side in ("context", "next_context")] == [
            0
        ] * (2 * len(ids))
    assert ids[-1] in found(store, "word11") and ids[-1] in found(store, "kayak")
