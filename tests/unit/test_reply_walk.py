"""The ``reply`` walk: in a conversation, what one turn raises is answered by the turns
after it (the reply, the follow-up), which often share no word with the question. The
two turns after each of the top hits join the fusion as ``reply``, below the hit they
follow; a ``when`` question walks the temporal chain instead."""

from __future__ import annotations

from collections.abc import Callable

from memloci import Memory

MakeMemory = Callable[..., Memory]

TURNS = [
    ("Ana", "We finally watched the meteor shower from the hill last night!"),
    # long enough that the answer's full-text row holds this turn only (not the seed's
    # words): the answer is found as the reply, not by the question's words
    (
        "Ben",
        "Wow, how was it? I have wanted to see one since I was a kid, did you stay"
        " up the whole night or head home early?",
    ),
    ("Ana", "I felt tiny and in awe of the universe."),
    ("Ben", "I started a pottery class this week."),
    ("Ana", "Pottery sounds relaxing."),
    ("Ben", "It really is, clay calms me down."),
]


def _conversation(make_memory: MakeMemory) -> Memory:
    mem = make_memory(embedder=None)  # full text + graph: the walk does not need vectors
    for speaker, text in TURNS:
        mem.add(text, user="u1", session="s1", speaker=speaker)
    return mem


def test_the_turns_after_the_best_hit_join_as_its_reply(make_memory: MakeMemory) -> None:
    mem = _conversation(make_memory)
    hits = mem.search("How did Ana feel about the meteor shower?", user="u1")
    texts = [h.memory.content for h in hits]
    seed, answer = TURNS[0][1], TURNS[2][1]
    assert texts[0] == seed
    assert answer in texts  # its words are not the question's
    hit = hits[texts.index(answer)]
    assert "reply" in hit.strategies
    seeds = {h.memory.id for h in hits if h.memory.content in (TURNS[0][1], TURNS[1][1])}
    assert any(f"reply to [{seed_id}]" in hit.why for seed_id in seeds)
    # below the hit it follows, and only the turns after a hit
    assert hit.score < hits[0].score
    assert all("reply" not in h.strategies for h in hits if h.memory.content == TURNS[0][1])


def test_a_when_question_walks_the_temporal_chain_not_the_reply(
    make_memory: MakeMemory,
) -> None:
    mem = _conversation(make_memory)
    hits = mem.search("When did Ana watch the meteor shower?", user="u1")
    assert hits and hits[0].memory.content == TURNS[0][1]
    assert all("reply" not in h.strategies for h in hits)
    assert any("temporal" in h.strategies for h in hits)


def test_the_reply_walk_stays_inside_the_callers_user(make_memory: MakeMemory) -> None:
    mem = _conversation(make_memory)
    for speaker, text in TURNS:
        mem.add(text.replace("Ana", "Zoe"), user="u2", session="s2", speaker=speaker)
    hits = mem.search("How did Ana feel about the meteor shower?", user="u1", k=20)
    assert hits and all(h.memory.user == "u1" for h in hits)
