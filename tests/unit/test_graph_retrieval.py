"""Graph retrieval: intent and complexity, time phrases, proper-name mentions, the
slow-path entity linking, and the graph strategies inside the search pipeline
(explanations, recipes, isolation) — through the SDK with fake embedders."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from memloci import Memory
from memloci.models import Edge, EdgeType, EntityType, short_id
from memloci.providers.fake import FakeEmbedder
from memloci.retrieval.intent import (
    COMPLEX,
    SIMPLE,
    EmbeddingIntentClassifier,
    Intent,
    KeywordIntentClassifier,
    is_complex,
    plan_query,
)
from memloci.retrieval.mentions import leading_name, mentions, speaker_name
from memloci.retrieval.timephrases import REPORT_LAG, _easter, chain_direction, time_window
from memloci.service.worker import link_mentions
from pgtest import both_backends

NOW = datetime(2024, 5, 10, 15, 30, tzinfo=UTC)
MAY_2023 = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)

MakeMemory = Callable[..., Memory]


# ---------------------------------------------------------------------- intent
@pytest.mark.parametrize(
    ("query", "intent"),
    [
        ("Why did Caroline move?", Intent.WHY),
        ("How come the build broke?", Intent.WHY),
        ("What made him quit his job?", Intent.WHY),
        ("I wonder about the reason for the outage", Intent.WHY),
        ("When did Melanie paint a sunrise?", Intent.WHEN),
        ("what time is the dentist", Intent.WHEN),
        ("How long has Nate had his turtles?", Intent.WHEN),
        ("Which year did they move?", Intent.WHEN),
        ("Who did Maria have dinner with?", Intent.WHO),
        ("whose car is it", Intent.WHO),
        ("What books has Melanie read?", Intent.WHAT),
        ("Where did Joanna travel to?", Intent.WHAT),
        ("How many children does Melanie have?", Intent.WHAT),
        ("tell me about Rust", Intent.WHAT),
        # the first question word decides, not a later "when" or "because"
        ("What does Nate feel when out in cool places?", Intent.WHAT),
        ("Who said it was because of the rain?", Intent.WHO),
        ("I moved to Berlin", Intent.GENERAL),
        ("thanks!", Intent.GENERAL),
    ],
)
def test_keyword_intent(query: str, intent: Intent) -> None:
    assert KeywordIntentClassifier().classify(query) is intent


def test_exemplar_intent_decides_when_confident_and_falls_back_to_rules() -> None:
    classifier = EmbeddingIntentClassifier(FakeEmbedder(dimension=256))
    assert classifier.ready(wait=True)
    assert classifier.classify("When did Bob visit Rome?") == (Intent.WHEN, "exemplars")
    assert classifier.classify("Why did Bob visit Rome?") == (Intent.WHY, "exemplars")
    assert classifier.classify("Who visited Rome with Bob?") == (Intent.WHO, "exemplars")
    strict = EmbeddingIntentClassifier(FakeEmbedder(dimension=256), threshold=2.0)
    assert strict.classify("When did Bob visit Rome?") == (Intent.WHEN, "rules")
    # a query vector of another size (another model) never breaks classification
    odd = FakeEmbedder(dimension=8).embed_query("when")
    assert classifier.classify("When did Bob visit Rome?", odd) == (Intent.WHEN, "rules")


def test_exemplars_that_cannot_be_embedded_leave_the_rules_in_charge() -> None:
    class Broken(FakeEmbedder):
        @property
        def model_id(self) -> str:
            return "broken:16"

        def embed(self, texts: object) -> object:  # type: ignore[override]
            raise RuntimeError("down")

    classifier = EmbeddingIntentClassifier(Broken(dimension=16))
    assert not classifier.ready(wait=True)
    assert classifier.classify("When did Bob visit Rome?") == (Intent.WHEN, "rules")


def test_complexity_sets_depth_limit_budget_and_seeds() -> None:
    simple = plan_query("When did Melanie paint a sunrise?")
    assert (simple.intent, simple.complexity, simple.source) == (Intent.WHEN, "simple", "rules")
    assert (simple.depth, simple.limit, simple.budget, simple.seeds) == (2, 5, 1000, 1)
    hard = plan_query("What do Jon and Gina both have in common?")
    assert hard.complexity == "complex"
    assert {k: getattr(hard, k) for k in COMPLEX} == COMPLEX
    assert {k: getattr(simple, k) for k in SIMPLE} == SIMPLE
    assert is_complex("How many times has Melanie gone to the beach?")
    assert is_complex("Compare the trip to Rome with the one to Paris")
    assert is_complex("alpha beta gamma delta epsilon zeta eta theta iota kappa")
    assert not is_complex("Where does Bob work?")


# ---------------------------------------------------------------------- time phrases
def day(y: int, m: int, d: int) -> datetime:
    return datetime(y, m, d, tzinfo=UTC)


@pytest.mark.parametrize(
    ("query", "start", "end"),
    [
        ("What movie did Joanna watch on 1 May, 2022?", day(2022, 5, 1), day(2022, 5, 2)),
        ("What did Nate do on October 6, 2022?", day(2022, 10, 6), day(2022, 10, 7)),
        ("Which book on 8th December, 2023?", day(2023, 12, 8), day(2023, 12, 9)),
        ("notes from 2024-02-29", day(2024, 2, 29), day(2024, 3, 1)),
        ("Where did Joanna travel to in July 2022?", day(2022, 7, 1), day(2022, 8, 1)),
        ("What happened in December 2023?", day(2023, 12, 1), day(2024, 1, 1)),
        ("Which performances did John achieve in 2023?", day(2023, 1, 1), day(2024, 1, 1)),
        ("Where was John between August 11 and 15 2023?", day(2023, 8, 11), day(2023, 8, 16)),
        ("between 3 and 5 June 2023", day(2023, 6, 3), day(2023, 6, 6)),
        ("What happened on 13/01/2024?", day(2024, 1, 13), day(2024, 1, 14)),
        ("the party of 29.12.2023", day(2023, 12, 29), day(2023, 12, 30)),
        ("on 1/13/2024 (month first, as it must be)", day(2024, 1, 13), day(2024, 1, 14)),
        # a day without a year: the latest one begun by NOW (10 May 2024)
        ("What did Fahim eat on 13th January?", day(2024, 1, 13), day(2024, 1, 14)),
        ("What did she do on Jan 13?", day(2024, 1, 13), day(2024, 1, 14)),
        ("the weekend of the 2nd of May", day(2024, 5, 2), day(2024, 5, 3)),
        ("What did we cook on December 24th?", day(2023, 12, 24), day(2023, 12, 25)),
        ("Where were you on May 20?", day(2023, 5, 20), day(2023, 5, 21)),
    ],
)
def test_time_window_dates_with_the_report_lag(query: str, start: datetime, end: datetime) -> None:
    window = time_window(query, now=NOW)
    assert window is not None
    assert (window.start, window.end) == (start, end + REPORT_LAG)


def test_time_window_bounds_relative_phrases_and_ambiguity() -> None:
    before = time_window("What did I buy before June 2023?", now=NOW)
    assert before is not None and (before.start, before.end) == (None, day(2023, 6, 1) + REPORT_LAG)
    after = time_window("anything after 1 May 2023", now=NOW)
    assert after is not None and (after.start, after.end) == (day(2023, 5, 2), None)
    since = time_window("since 2021", now=NOW)
    assert since is not None and (since.start, since.end) == (day(2021, 1, 1), None)
    shortly = time_window("Where was Tim in the week before 16 November 2023?", now=NOW)
    assert shortly is not None and shortly.start == day(2023, 11, 16) - timedelta(days=31)
    last_week = time_window("what did I do last week", now=NOW)
    assert last_week is not None and (last_week.start, last_week.end) == (day(2024, 5, 3), None)
    yesterday = time_window("what did we say yesterday?", now=NOW)
    assert yesterday is not None
    assert (yesterday.start, yesterday.end) == (day(2024, 5, 9), day(2024, 5, 10))
    ago = time_window("the party 3 weeks ago", now=NOW)
    assert ago is not None and ago.start is not None and ago.end is not None
    assert ago.start < day(2024, 4, 19) < ago.end
    # a month without a year: the latest one begun by now (NOW is 10 May 2024)
    may = time_window("Which outdoor spot did Joanna visit in May?", now=NOW)
    assert may is not None and (may.start, may.end) == (
        day(2024, 5, 1),
        day(2024, 6, 1) + REPORT_LAG,
    )
    june = time_window("what did we do during June?", now=NOW)
    assert june is not None and (june.start, june.end) == (
        day(2023, 6, 1),
        day(2023, 7, 1) + REPORT_LAG,
    )
    assert june.yearless and (june.year_before().start, june.year_before().end) == (
        day(2022, 6, 1),
        day(2022, 7, 1) + REPORT_LAG,
    )
    assert may.yearless and not time_window("in May 2023", now=NOW).yearless  # type: ignore[union-attr]
    assert time_window("I moved to Mayfair", now=NOW) is None
    # a day without a year is yearless; "may" not written as the month is the verb
    jan = time_window("what did we do on 13 January?", now=NOW)
    assert jan is not None and jan.yearless
    assert (jan.year_before().start, jan.year_before().end) == (
        day(2023, 1, 13),
        day(2023, 1, 14) + REPORT_LAG,
    )
    leap = time_window("on Feb 29", now=NOW)
    assert leap is not None and leap.year_before().start == day(2023, 2, 28)
    until = time_window("before March 3", now=NOW)
    assert until is not None and until.yearless and until.start is None
    assert until.year_before().end == day(2023, 3, 3) + REPORT_LAG
    assert time_window("what did we do on may 5", now=NOW) is None
    typed = time_window("what did we do on may 5th", now=NOW)
    assert typed is not None and typed.start == day(2024, 5, 5)
    assert time_window("you may 2 times", now=NOW) is None
    assert time_window("on 31 April", now=NOW) is None


@pytest.mark.parametrize(
    ("query", "start", "days", "yearless"),
    [
        ("What did Fahim do on Christmas Eve?", day(2023, 12, 24), 1, True),
        ("what did we do over Christmas", day(2023, 12, 24), 3, True),
        ("on new years eve", day(2023, 12, 31), 1, True),
        ("on New Year’s Day", day(2024, 1, 1), 1, True),
        ("at Thanksgiving 2023", day(2023, 11, 23), 1, False),  # the fourth Thursday
        ("on Thanksgiving", day(2023, 11, 23), 1, True),
        ("around Halloween", day(2023, 10, 28), 7, True),
        ("on Valentine's Day", day(2024, 2, 14), 1, True),
        ("on the fourth of July", day(2023, 7, 4), 1, True),
        ("during Christmas 2022", day(2022, 12, 24), 3, False),
        # movable feasts: Easter Sunday 2024 was 31 March, 2023's 9 April
        ("what did we do over Easter", day(2024, 3, 29), 4, True),  # Good Friday to Monday
        ("on Easter Sunday 2023", day(2023, 4, 9), 1, False),
        ("on Good Friday", day(2024, 3, 29), 1, True),
        ("on Mother's Day", day(2023, 5, 14), 1, True),  # 12 May 2024 is still to come
        ("on Father's Day 2023", day(2023, 6, 18), 1, False),
        ("over Memorial Day weekend", day(2023, 5, 27), 3, True),
        ("on Labor Day 2023", day(2023, 9, 4), 1, False),
        ("over Labour Day weekend", day(2023, 9, 2), 3, True),
        ("on St. Patrick's Day", day(2024, 3, 17), 1, True),
        ("on Boxing Day", day(2023, 12, 26), 1, True),
    ],
)
def test_a_holiday_said_as_when_is_its_days(
    query: str, start: datetime, days: int, yearless: bool
) -> None:
    window = time_window(query, now=NOW)
    assert window is not None and window.yearless is yearless
    assert (window.start, window.end) == (start, start + timedelta(days=days) + REPORT_LAG)


@pytest.mark.parametrize(
    ("query", "start", "end"),
    [  # NOW is Friday 10 May 2024
        ("what did we say last night?", day(2024, 5, 9), day(2024, 5, 10)),
        ("the day before yesterday", day(2024, 5, 8), day(2024, 5, 9)),
        ("what did I eat this morning", day(2024, 5, 10), None),
        ("what did we do last weekend?", day(2024, 5, 4), day(2024, 5, 7)),
        ("what did you do over the weekend?", day(2024, 5, 4), day(2024, 5, 7)),
        ("this past weekend", day(2024, 5, 4), day(2024, 5, 7)),
        ("what did I tell you last Friday?", day(2024, 5, 3), day(2024, 5, 11)),
        ("what happened on Monday?", day(2024, 5, 6), day(2024, 5, 11)),
        ("this past Sunday", day(2024, 5, 5), day(2024, 5, 11)),
        ("a few days ago", day(2024, 5, 5), day(2024, 5, 9)),
        ("the other day", day(2024, 5, 3), day(2024, 5, 10)),
    ],
)
def test_phrases_that_count_back_from_now(
    query: str, start: datetime, end: datetime | None
) -> None:
    window = time_window(query, now=NOW)
    assert window is not None and (window.start, window.end) == (start, end)
    assert not window.yearless


@pytest.mark.parametrize(
    ("query", "start", "end", "yearless"),
    [  # a named week or third of a month, 3 days loose on each side; NOW is 10 May 2024
        ("the second week of November 2023?", day(2023, 11, 5), day(2023, 11, 18), False),
        ("in the second week of November", day(2023, 11, 5), day(2023, 11, 18), True),
        ("the last week of July 2023", day(2023, 7, 22), day(2023, 8, 1), False),
        ("in mid-August 2023", day(2023, 8, 8), day(2023, 8, 24), False),
        ("late June 2023", day(2023, 6, 18), day(2023, 7, 1), False),
        ("in early May", day(2024, 5, 1), day(2024, 5, 14), True),
        ("the end of June", day(2023, 6, 18), day(2023, 7, 1), True),
        ("in May 2023", day(2023, 5, 1), day(2023, 6, 1), False),  # the whole month
    ],
)
def test_part_of_a_month(query: str, start: datetime, end: datetime, yearless: bool) -> None:
    window = time_window(query, now=NOW)
    assert window is not None and window.yearless is yearless
    assert (window.start, window.end) == (start, end + REPORT_LAG)


def test_the_edge_of_a_month_as_a_bound() -> None:
    by_end = time_window("what had we saved by the end of May 2023?", now=NOW)
    assert by_end is not None and (by_end.start, by_end.end) == (None, day(2023, 6, 1) + REPORT_LAG)
    before = time_window("before the start of June 2023", now=NOW)
    assert before is not None and (before.start, before.end) == (None, day(2023, 6, 1) + REPORT_LAG)
    after = time_window("after the end of May 2023", now=NOW)
    assert after is not None and (after.start, after.end) == (day(2023, 6, 1), None)


def test_over_the_weekend_on_a_sunday_is_this_weekend() -> None:
    sunday = datetime(2024, 5, 12, 18, tzinfo=UTC)
    this = time_window("what did we do over the weekend?", now=sunday)
    assert this is not None and (this.start, this.end) == (day(2024, 5, 11), day(2024, 5, 14))
    last = time_window("what did we do last weekend?", now=sunday)
    assert last is not None and last.start == day(2024, 5, 4)
    assert time_window("what are we doing this weekend?", now=NOW) is None  # the next one


def test_a_holiday_a_year_earlier_is_that_years_days() -> None:
    easter = time_window("what did we do over Easter", now=NOW)
    assert easter is not None and easter.start == day(2024, 3, 29)
    earlier = easter.year_before()  # Easter 2023 was 9 April, not 31 March
    assert (earlier.start, earlier.end) == (day(2023, 4, 7), day(2023, 4, 11) + REPORT_LAG)
    assert earlier.year_before().start == day(2022, 4, 15) and earlier.label() == "over Easter"
    thanksgiving = time_window("at Thanksgiving", now=NOW)
    assert thanksgiving is not None and thanksgiving.year_before().start == day(2022, 11, 24)


def test_a_holiday_that_is_not_when_is_no_window() -> None:
    assert time_window("What did Ana buy for Christmas?", now=NOW) is None
    assert time_window("Where did the kids hunt Easter eggs?", now=NOW) is None
    assert time_window("Halloween costumes", now=NOW) is None
    assert time_window("on 31 February, 2023", now=NOW) is None
    assert time_window("no time here", now=NOW) is None


def test_chain_direction() -> None:
    assert chain_direction("When did Melanie go on a hike after the roadtrip?") == "forward"
    assert chain_direction("Which city was John in before traveling to Chicago?") == "backward"
    assert chain_direction("What did I buy before June 2023?") == "both"  # a window, not a chain
    assert chain_direction("When did Caroline move?") == "both"


# ---------------------------------------------------------------------- mentions
@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("Thanks, Melanie! I went to Rome with Jon last week.", ["Rome", "Jon"]),
        ("Hey Mel! Good to see you!", []),
        ("Wow Nate, that is so cool! Did you play Valorant?", ["Valorant"]),
        ('I watched "The Lord of the Rings" last night!', ["Lord of the Rings"]),
        ("I love Dr. Seuss books, Caroline.", ["Dr Seuss"]),
        ("We went to the LGBTQ+ center. I met Sarah and Tom there.", ["LGBTQ", "Sarah", "Tom"]),
        ("I read Charlotte's Web in May. I've loved it since Monday.", ["Charlotte's Web"]),
        ("Paris was lovely.", []),  # a sentence's first word is never taken
        ("I told Caroline about it.", ["Caroline"]),
        ("Did Oliver's vet call? I think Oliver is fine.", ["Oliver"]),
    ],
)
def test_mentions(text: str, names: list[str]) -> None:
    assert mentions(text) == names


def test_speaker_name() -> None:
    assert speaker_name("Caroline") == "Caroline"
    assert speaker_name("Mary  Ann") == "Mary Ann"
    assert speaker_name("Melanie H.") == "Melanie H."  # an initial
    assert speaker_name("alice") == "Alice"  # typed in lower case
    assert speaker_name("fahim  khan") == "Fahim Khan"
    # a contact name's decoration is left out
    assert speaker_name("Emi 🌸") == "Emi"
    assert speaker_name("~elise~") == "Elise"
    assert speaker_name("Fahim Khan (work)") == "Fahim Khan"
    assert speaker_name("@mel") == "Mel"
    assert speaker_name("O'Brien") == "O'Brien"
    assert speaker_name("❤️") is None
    assert speaker_name("+44 7700 900123") is None
    not_names = ("user", "assistant", "bot-1", "alice17", "me", "mom", None, "")
    assert [speaker_name(s) for s in not_names] == [None] * len(not_names)


# ---------------------------------------------------------------------- slow-path linking
def test_the_worker_links_speakers_and_known_names(mem: Memory) -> None:
    store = mem.service.store
    mem.add("I signed up for a pottery class", speaker="Melanie", user="u", session="s")
    mem.add("Thanks, Melanie! Did Melanie's kids join?", speaker="Caroline", user="u", session="s")
    mem.add("Rome was great, I went with Oscar", speaker="Melanie", user="u", session="s")
    assert mem.flush(20)
    people = {e.canonical_name: e for e in store.entities.list_entities("default")}
    assert set(people) == {"Melanie", "Caroline"}  # Rome / Oscar are not registered
    assert people["Melanie"].type is EntityType.PERSON
    # two turns said, one mention ("Thanks, Melanie!" addresses her: not a mention)
    assert people["Melanie"].mention_count == 3
    turns = {n.content: n.id for n in mem.list(type="episodic")}
    linked = store.entities.node_entities("default", list(turns.values()))
    names = {c: sorted(e.canonical_name for e in linked[i]) for c, i in turns.items()}
    assert names["Thanks, Melanie! Did Melanie's kids join?"] == ["Caroline", "Melanie"]
    # linking again adds nothing and counts nothing twice
    assert link_mentions(store, list(turns.values()), now=datetime.now(UTC)) == 0
    assert store.entities.find_entity("default", "Melanie").mention_count == 3  # type: ignore[union-attr]


def test_a_turn_beginning_with_a_known_name_is_linked_to_it(mem: Memory) -> None:
    """ "Ana got promoted already!" is about Ana once she is known; a turn beginning with
    a name nobody knows makes no entity of it."""
    store = mem.service.store
    mem.add("My best friend is Ana", speaker="user", user="u", session="s")
    mem.remember("Ana is the user's best friend", user="u", subject="Ana")
    assert mem.flush(20)
    assert store.entities.find_entity("default", "Ana") is not None
    told = mem.add("Ana got promoted to senior designer already!", speaker="user", user="u")
    other = mem.add("Zorblat arrived late again today", speaker="user", user="u")
    assert mem.flush(20)
    linked = store.entities.node_entities("default", [told.id, other.id])
    assert [e.canonical_name for e in linked.get(told.id, [])] == ["Ana"]
    assert not linked.get(other.id) and store.entities.find_entity("default", "Zorblat") is None


def test_registering_mentions_is_opt_in(mem: Memory) -> None:
    store = mem.service.store
    node = mem.add("We flew to Rome with Oscar", speaker="user", user="u", session="s")
    assert mem.flush(20)
    assert (
        store.entities.list_entities("default") == []
    )  # a role is not a person; names not registered
    assert link_mentions(store, [node.id], now=datetime.now(UTC), register=True) == 2
    assert sorted(e.canonical_name for e in store.entities.list_entities("default")) == [
        "Oscar",
        "Rome",
    ]
    assert all(e.type is EntityType.CONCEPT for e in store.entities.list_entities("default"))


@pytest.mark.parametrize(
    ("text", "found"),
    [
        # a name that owns or does something: an entity may be made of it
        ("Caroline attended a support group.", ("Caroline", True)),
        ("Caroline's sister is a nurse", ("Caroline", True)),
        ("Sam Lee works at Acme", ("Sam Lee", True)),
        ("Tim recently finished a book", ("Tim", True)),
        # name-shaped, but only a known entity of that name takes it
        ("Caroline is a painter", ("Caroline", False)),
        ("Birthday is May 3", ("Birthday", False)),
        ("Melanie and Caroline painted a lake", ("Melanie", False)),
        # not a name: a first word followed by a comma, a role, a verb, a title, a pronoun
        ("Definitely, I agree", None),
        ("Thanks!", None),
        ("User prefers tea", None),
        ("Likes jazz", None),
        ("Played tennis today", None),
        ("Met Sarah for coffee", None),
        ("Sister is a nurse", None),
        ("I moved to Lisbon", None),
        ("Caroline", None),
    ],
)
def test_leading_name(text: str, found: tuple[str, bool] | None) -> None:
    assert leading_name(text) == found


@both_backends
def test_a_fact_without_a_subject_is_about_the_name_it_begins_with(
    make_memory: MakeMemory,
) -> None:
    """An agent's facts often leave out ``subject``: "Caroline attended …" is about
    Caroline all the same, and a later fact naming her inside a sentence is linked too."""
    mem = make_memory()
    mem.remember("Caroline attended an LGBTQ support group.", user="u1")
    mem.remember("The support group made Caroline feel accepted.", user="u1")
    mem.remember("Likes jazz and long walks.", user="u1")
    mem.remember("Birthday is on May 3.", user="u1")  # no entity "Birthday"
    assert mem.flush(20)
    store = mem.service.store
    caroline = store.entities.find_entity("default", "Caroline")
    assert caroline is not None
    assert [e.canonical_name for e in store.entities.list_entities("default")] == ["Caroline"]
    facts = {n.content: n.id for n in mem.list(type="semantic", limit=10)}
    linked = store.entities.node_entities("default", list(facts.values()))
    about = {c for c, i in facts.items() if caroline.id in {e.id for e in linked.get(i, [])}}
    assert about == {
        "Caroline attended an LGBTQ support group.",
        "The support group made Caroline feel accepted.",
    }
    assert mem.get(facts["Likes jazz and long walks."]).subject is None  # stored as given
    hit = mem.search("Where did Caroline go?", user="u1", k=1)[0]
    assert "entity Caroline" in hit.why


def test_link_mentions_can_be_switched_off(make_memory: MakeMemory) -> None:
    mem = make_memory()
    assert mem.service.worker is not None
    mem.service.worker.link_mentions = False
    mem.add("hello there", speaker="Caroline", user="u", session="s")
    assert mem.flush(20)
    assert mem.service.store.entities.list_entities("default") == []


# ---------------------------------------------------------------------- the pipeline
def conversation(mem: Memory, user: str, turns: list[tuple[str, str]], **kw: object) -> list[str]:
    nodes = mem.add(
        [{"role": "user", "content": text, "name": who} for who, text in turns],
        user=user, session=f"{user}-s", **kw,  # type: ignore[arg-type]
    )  # fmt: skip
    return [n.id for n in nodes]


def test_a_named_entity_is_a_constraint_and_the_hit_says_so(mem: Memory) -> None:
    ids = conversation(
        mem, "u",
        [
            ("Caroline", "Hey Melanie, how was the weekend?"),
            ("Melanie", "Great! I went running to de-stress, then pottery."),
            ("Caroline", "Pottery sounds fun, Melanie! I prefer painting."),
        ],
    )  # fmt: skip
    assert mem.flush(20)
    hits = mem.search("What does Melanie do at pottery?", user="u", k=3)
    assert hits[0].memory.id == ids[1]
    assert "entity" in hits[0].strategies and "entity Melanie" in hits[0].why
    # the core recipe (no graph) has no graph strategies
    core = mem.search("What does Melanie do at pottery?", user="u", k=3, recipe="core")
    assert all("entity" not in h.strategies for h in core)


def test_when_queries_walk_the_temporal_chain(make_memory: MakeMemory) -> None:
    mem = make_memory(embedder=None)  # keyword intents, full text + graph
    ids = conversation(
        mem, "u",
        [
            ("user", "guess what happened at the marathon"),
            # long: the last turn's row holds this one only, not the marathon's words
            ("assistant", "Tell me! I have been wondering all week how it went, whether"
             " the weather held up, how your knee felt on the hills and if your sister"
             " came to cheer at the finish."),
            ("user", "I finished in under four hours"),
        ],
        event_time=MAY_2023,
    )  # fmt: skip
    hits = mem.search("When was the marathon?", user="u", k=5)
    assert hits[0].memory.id == ids[0]
    chained = {h.memory.id: h for h in hits}
    assert ids[1] in chained and "temporal" in chained[ids[1]].strategies
    assert f"temporal chain from [{ids[0]}] (+1)" in chained[ids[1]].why
    # "after the marathon" walks forward only
    after = mem.search("What happened after the marathon?", user="u", k=5)
    assert all("(-" not in h.why for h in after)


def test_why_queries_walk_causal_edges(make_memory: MakeMemory) -> None:
    mem = make_memory(embedder=None)
    cause = mem.add("the server ran out of disk space", user="u", session="a")
    effect = mem.add("the nightly backup failed", user="u", session="b")
    now = datetime.now(UTC)
    mem.service.store.memories.insert_edge(
        Edge(
            id=short_id() + short_id(), source_id=cause.id, target_id=effect.id,
            relation=EdgeType.CAUSAL, valid_from=now, created_at=now,
        )
    )  # fmt: skip
    hits = mem.search("Why did the backup fail?", user="u", k=5)
    assert [h.memory.id for h in hits][:2] == [effect.id, cause.id]
    assert hits[1].strategies.get("causal") and f"cause of [{effect.id}]" in hits[1].why


def test_a_date_in_the_query_ranks_memories_inside_its_window(make_memory: MakeMemory) -> None:
    mem = make_memory(embedder=None)
    may = mem.add("we adopted a puppy called Coco", user="u", session="a", event_time=MAY_2023)
    later = mem.add(
        "the puppy learned to sit", user="u", session="b", event_time=MAY_2023 + timedelta(days=90)
    )
    hits = mem.search("What puppy did we get in May 2023?", user="u", k=5)
    assert hits[0].memory.id == may.id
    assert hits[0].strategies.get("time") == 1 and "time: May 2023" in hits[0].why
    assert "time" not in {s for h in hits if h.memory.id == later.id for s in h.strategies}


@both_backends
def test_a_month_without_a_year_is_the_latest_one_that_holds_a_match(
    make_memory: MakeMemory,
) -> None:
    """ "in June" asked of a chat imported from years ago: no memory of this June (or the
    last) matches, so the June that does is searched; "in May 2023" stays May 2023."""
    mem = make_memory(embedder=None)
    june = datetime(datetime.now(UTC).year - 3, 6, 12, tzinfo=UTC)
    camp = mem.add("we went camping by the lake", user="u", session="a", event_time=june)
    mem.add(
        "we went camping in the mountains", user="u", session="b", event_time=june.replace(month=9)
    )
    hits = mem.search("Where did we go camping in June?", user="u", k=5)
    assert hits[0].memory.id == camp.id
    assert hits[0].strategies.get("time") == 1 and "time: in June" in hits[0].why
    assert len([h for h in hits if "time" in h.strategies]) == 1
    dated = mem.search(f"camping in June {june.year + 1}?", user="u")
    assert not any("time" in h.strategies for h in dated)  # a year named is that year


@both_backends
def test_a_day_without_a_year_is_the_latest_one_that_holds_a_match(
    make_memory: MakeMemory,
) -> None:
    """A chat of a few weeks asked "Where did we have ramen on 13 January?": the day is looked
    for in the latest January that holds a match, not only this year's."""
    mem = make_memory(embedder=None)
    year = datetime.now(UTC).year - 2
    ramen = mem.add("we had ramen downtown", user="u", session="a", event_time=day(year, 1, 13))
    mem.add("we had ramen at home", user="u", session="b", event_time=day(year, 2, 20))
    hits = mem.search("Where did we have ramen on 13 January?", user="u", k=5)
    assert hits[0].memory.id == ramen.id
    assert "time: 13 January" in hits[0].why
    assert len([h for h in hits if "time" in h.strategies]) == 1
    numeric = mem.search(f"Where did we have ramen on 13/01/{year}?", user="u", k=5)
    assert numeric[0].memory.id == ramen.id and "time" in numeric[0].strategies


@both_backends
def test_last_friday_is_the_latest_friday(make_memory: MakeMemory) -> None:
    """An agent asked "what did I book last Friday?" ranks what was said that Friday (or
    reported in the days after) above the same words said weeks before."""
    mem = make_memory(embedder=None)
    today = datetime.now(UTC).replace(hour=12, minute=0, second=0, microsecond=0)
    friday = today - timedelta(days=(today.weekday() - 4 - 1) % 7 + 1)
    mem.add("I booked a table at the harbour", user="u", event_time=friday - timedelta(days=21))
    dentist = mem.add("I booked the dentist for June", user="u", event_time=friday)
    hits = mem.search("what did I book last Friday?", user="u", k=5)
    assert hits[0].memory.id == dentist.id and "time: last Friday" in hits[0].why
    assert len([h for h in hits if "time" in h.strategies]) == 1


@both_backends
def test_over_easter_is_that_years_easter(make_memory: MakeMemory) -> None:
    """Easter moves: "what did we do over Easter?" finds what was said over the last
    Easter (Good Friday to Easter Monday), not the same words a month later."""
    mem = make_memory(embedder=None)
    year = datetime.now(UTC).year - 1  # last year's: this year's holds no match, if begun
    sunday = datetime.combine(_easter(year), datetime.min.time(), tzinfo=UTC)
    mem.add("We painted eggs with the kids", user="u", event_time=sunday + timedelta(days=40))
    hunt = mem.add("We painted eggs and hid them", user="u", event_time=sunday)
    hits = mem.search("what did we paint over Easter?", user="u", k=5)
    assert hits[0].memory.id == hunt.id and "time: over Easter" in hits[0].why


def test_graph_strategies_never_leak_other_users_memories(mem: Memory) -> None:
    alice = conversation(mem, "alice", [("Caroline", "my vault code is 1111"), ("Melanie", "ok")])
    bob = conversation(mem, "bob", [("Caroline", "my vault code is 2222"), ("Melanie", "ok")])
    assert mem.flush(20)
    seen: set[str] = set()
    for query in (
        "What is Caroline's vault code?",
        "When did Caroline mention the vault code?",
        "Why is the vault code 1111?",
        "Who has a vault code?",
        "vault code in May 2023",
    ):
        seen |= {h.memory.id for h in mem.search(query, user="alice", k=20)}
    assert seen & set(alice) and not seen & set(bob)
    other_ns = {h.memory.id for h in mem.search("Caroline vault", namespace="other", k=20)}
    assert other_ns == set()


def test_graph_weight_zero_is_the_core_engine(make_memory: MakeMemory) -> None:
    mem = make_memory(embedder=None, weight_graph=0)
    conversation(mem, "u", [("user", "the marathon was hard"), ("assistant", "well done")])
    for hit in mem.search("When was the marathon?", user="u"):
        assert set(hit.strategies) <= {"fulltext", "key"}


@both_backends
def test_what_a_day_holds_answers_what_did_i_do_then(make_memory: Callable[..., Memory]) -> None:
    """ "what did I do yesterday?" has no other word to match: the day's memories are the
    time list, and the one from yesterday comes first."""
    mem = make_memory()
    now = datetime.now(UTC).replace(hour=12, minute=0, second=0, microsecond=0)
    said = [
        (12, "I spent the afternoon baking sourdough bread"),
        (5, "Went hiking in the hills, the views were stunning"),
        (1, "I finally fixed the leaking kitchen tap myself"),
    ]
    for days, text in said:
        mem.add(text, user="u1", session=f"s{days}", role="user", event_time=now - timedelta(days))
    mem.flush()
    hits = mem.search("what did I do yesterday?", user="u1", k=3)
    assert hits[0].memory.content.startswith("I finally fixed")
    assert "time: yesterday" in hits[0].why
    day = (now - timedelta(5)).strftime("%d %B")
    told = mem.search(f"what did I tell you on {day}?", user="u1")  # "tell" matches nothing
    timed = {h.memory.content for h in told if "time: " in h.why}
    assert "Went hiking in the hills, the views were stunning" in timed
    assert "I spent the afternoon baking sourdough bread" not in timed
