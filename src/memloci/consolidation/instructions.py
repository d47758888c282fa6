"""Standing instructions (layer: consolidation): which user sentences the rule extractor
stores as procedures.

A procedure is put into every later prompt as a standing instruction to the agent, so a
sentence becomes one only when it tells the agent how to work from now on:

* it is an **imperative**: its action word is the base form of a verb of what an
  assistant does for its user (:data:`AGENT_VERBS`: answer, write, send, schedule, cc,
  deploy, …; "be" only before a manner of answering, "be concise"; "let" only in "let
  me know"), bare or after "please", "always", "never", "don't ever", a marker ("from
  now on", "going forward", "by default", "for future reference") or a frame ("I want
  you to …", "can you …", "make sure you …", "you should …", "your replies should …");
* it is **standing**: it says always or never ("ever", "any more", "every time",
  "stop doing …"), has a marker ("reply in English from now on"), or is a condition the
  agent acts on each time it holds ("when I say ship it, run the tests first",
  "whenever you draft an email, sign it …") — a one-off request ("send this to Bob")
  is not;
* it is **for the agent**: a marker, a condition, a frame that asks the agent ("please",
  "I want you to", "make sure you"), or what it says is about the user ("me", "my") or
  the agent's work — a verb only that work has (:data:`WORK_VERBS`: summarize, cc,
  deploy) or a thing it works on (:data:`WORK_NOUNS`: emails, meetings, code, "your
  replies"). "Never put metal in the microwave" is a tip for anyone.

Shaped like one but not one: chit-chat with no verb after always / never ("always happy
to help", "never been there", "always great chatting with you"), a habit or a report
(no imperative: "I always go running", "my mom always told me to never give up"),
sayings about life ("never give up", "never stop learning", "always follow your
dreams"), a question ("should I always use sunscreen?"; "can you always …?" is a
request), an instruction in quotes or attributed to someone ("my boss said 'never
deploy on Fridays'", "…, my instructor drilled that into me") and, between people (turns
of named speakers), advice to the other one: a name addressed ("…, Mel!") or "you
should …". Measured on ``tests/data/instructions.jsonl`` (``tests/unit/
test_instruction_set.py``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memloci.retrieval.mentions import addressed, is_name_word


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# what an assistant does for its user: writing and answering, formatting, mail and
# messages, calendars and bookings, purchases, files, code and deployment, lookups
AGENT_VERBS = _words(
    # answering and writing
    "answer reply respond write rewrite draft compose phrase word say tell ask explain "
    "describe clarify summarize summarise paraphrase rephrase translate transcribe quote "
    "cite link mention note state speak talk address call refer greet thank apologize "
    "apologise introduce spell pronounce use avoid prefer consider assume default follow "
    "stick respect ignore skip omit exclude drop cut include add attach insert append "
    "prepend paste pick choose select put give show display present provide offer "
    "suggest recommend propose "
    "compare list number bold highlight underline italicize italicise capitalize "
    "capitalise format structure organize organise sort group rank order label tag mark "
    "flag name title end start begin open close keep stop make set limit cap round "
    "convert calculate estimate express indent wrap split check recheck verify "
    "double-check cross-check fact-check proofread review read edit revise correct fix "
    "confirm warn alert notify inform update report remind track monitor sign "
    # mail, messages, calendars, bookings, purchases
    "send forward share post publish email text message cc bcc copy loop ping contact "
    "invite schedule reschedule plan book reserve cancel accept decline approve reject "
    "order buy purchase pay spend exceed renew wait disturb interrupt reveal disclose "
    "leak expose "
    # files, code and deployment, lookups, devices
    "save store file archive backup delete remove hide mute redact mask upload download "
    "export import print generate create prepare fill enter submit sync extract search "
    "google find research validate sanitize sanitise escape code test lint build "
    "compile run deploy release ship push merge commit rebase squash pin install "
    "upgrade document comment log handle refactor rename "
    # a phone's or a home's assistant
    "snooze wake silence play pause dim"
)
# ... and those of them that are the agent's work by themselves: "always summarize …" is
# for the agent, "always keep a spare key …" is a tip for anyone
WORK_VERBS = _words(
    "answer reply respond summarize summarise paraphrase rephrase translate transcribe "
    "cite format cc bcc schedule reschedule deploy commit lint refactor proofread bold "
    "italicize italicise capitalize capitalise indent redact convert round draft forward "
    "suggest recommend notify"
)
# what the agent works on and with, for its user: mail and messages, documents, code,
# calendars, numbers and units, the form and tone of its own answers
WORK_NOUNS = _words(
    "reply replies answer answers response responses email emails e-mail e-mails mail "
    "inbox message messages dm dms chat chats summary summaries tldr draft drafts note "
    "notes memo memos document documents doc docs file files folder folders attachment "
    "attachments link links source sources citation citations reference references report "
    "reports invoice invoices receipt receipts slide slides deck decks spreadsheet "
    "spreadsheets sheet sheets table tables chart charts list lists bullet bullets "
    "heading headings title titles format formatting markdown code codebase repo "
    "repository branch branches commit commits test tests linter pr prs request requests "
    "build builds deployment deployments release releases production function functions "
    "variable variables script scripts query queries sql meeting meetings invite invites "
    "invitation invitations calendar event events appointment appointments reminder "
    "reminders alarm alarms agenda agendas date dates timezone timezones zone zones units "
    "metric imperial celsius fahrenheit currency number numbers decimal decimals "
    "percentage percentages emoji emojis punctuation comma commas exclamation spelling "
    "grammar tone jargon disclaimer disclaimers caveat caveats greeting greetings "
    "sign-off signature paragraph paragraphs sentence sentences reasoning explanation "
    "explanations translation translations suggestion suggestions recommendation "
    "recommendations output outputs "
    # one word or phrase of what it writes: "never use the word 'utilize'"
    "word phrase term expression"
)
# the user, in what the agent is told to do: "always call me …", "never share my …"
_USER_WORDS = _words("me my mine myself i i'm i've i'd i'll we we're we've us our ours")
# frames that speak to the agent (not "can you …?", which may ask what one can do, nor
# "you should …", which is advice as often)
_TO_AGENT = frozenset(("please", "want", "sure", "standing", "output"))
# "re-" and "double-" forms of an agent verb are one too ("resend", "double-book")
_VERB_PREFIXES = ("re", "auto", "double-", "auto-", "pre-", "cross-")
_SPLIT_PREFIXES = _words("double cross")
# "be …" is an instruction only as a manner of answering ("always be concise")
_STYLE = _words(
    "concise brief short succinct terse direct blunt honest candid polite formal "
    "informal casual friendly professional specific precise explicit clear thorough "
    "detailed accurate objective neutral transparent upfront patient gentle respectful "
    "rude vague verbose sarcastic condescending preachy wordy patronizing patronising "
    "pushy dismissive judgmental snarky cheesy"
)
_DEGREE = _words("more less very extra super so too a bit little always never")
# what the user does when the agent should act: "when I say ship it, …" (between people,
# only these: "when I get home, call me" is an errand between friends)
_TELL_VERBS = _words(
    "say ask type send paste share mention write forward upload tag request text message "
    "email use reply answer"
)
# "never stop learning", "always keep pushing": sayings, unless a marker says otherwise
_ONGOING = _words("stop keep quit")
_LIFE = _rx(
    r"\b(?:give up|say never|check out|look back|let go|take care)\b|\byour (?:own )?"
    r"(?:dreams?|heart|gut|instincts?|passions?|bliss|soul|feelings)\b"
)
_STANDING_WORDS = _words("always never ever")
# words before the action: "please never …", "don't ever …", "always just …"
_ADVERBS = _words(
    "please pls plz kindly always never ever also just only first still really don't dont do not"
)

# quoted text (masked before reading the sentence: an instruction in quotes is someone's
# words, and quoted words are no verbs); a double quote left open runs to the end
QUOTED = re.compile(
    r"\"[^\"]*(?:\"|$)|“[^”]*(?:”|$)|‘[^’]*’|(?<!\w)'(?:[^']|(?<=\w)'(?=\w))*'(?!\w)"
)
_LEAD = _rx(
    r"(?:(?:oh|ok|okay|so|well|also|and|but|btw|by the way|fyi|hey|actually|anyway|plus|"
    r"alright|all right|now|listen|look|one more thing|another thing|last thing|"
    r"heads[- ]up|(?:quick |one )?note|(?:quick |friendly )?reminder|important|"
    r"just so you know|for the record|p\.?s\.?)\b[\s,:;.!-]*)+"
)
_MARKER = _rx(
    r"(?:from now on|from here on(?: out)?|from this point (?:on|forward)|going forward|"
    r"moving forward|in (?:the )?future|henceforth|by default|as a (?:general )?rule|"
    r"in general|generally|for (?:the )?future(?: reference)?|for future reference|"
    r"for (?:all )?(?:future|later) (?:chats|conversations|sessions|requests|replies|"
    r"answers|emails|messages|tasks)|(?:new|general|ground|house|standing|golden) rule|"
    r"rule of thumb)\b[\s,:;.-]*"
)
_FRAMES = [
    ("please", _rx(r"(?:please|pls|plz|kindly)\b[\s,]*")),
    ("want", _rx(r"i(?:'d|’d| would)? (?:want|need|like|love) you to\s+")),
    ("want", _rx(r"i(?:'d|’d| would) (?:prefer|rather|like it|love it) (?:if |that )?you\s+")),
    ("ask", _rx(r"(?:can|could|would|will) you(?: please)?\s+")),
    ("sure", _rx(r"(?:make sure|be sure)(?: that)?(?: you| to)\s+")),
    ("sure", _rx(r"(?:remember|don'?t forget|don’t forget|do not forget) to\s+")),
    # "never forget to cc …" is "always cc …"
    ("standing", _rx(r"(?:never (?:ever )?forget|always remember) to\s+")),
    ("should", _rx(r"you (?:should|must|need to|have to|'ve got to|’ve got to|gotta|ought to)\s+")),
    (
        "output",
        _rx(
            r"your (?:replies|answers|responses|emails|messages|summaries|drafts|code|"
            r"commits|notes|reports|texts|outputs?|explanations|translations|suggestions|"
            r"recommendations|posts|comments|titles|subject lines) "
            r"(?:should|must|need to|have to)\s+"
        ),
    ),
]
_CONDITION = _rx(
    r"(?:when(?:ever)?|if|every time|each time|any ?time|before|after)\s+(?P<cond>[^,]+?)"
    r"\s*,\s*"
)
_COND_ADVERB = r"(?:(?:ever|first|just|also|only|accidentally|next)\s+)?"
_COND_I = _rx(rf"i(?:'m|’m|'ve|’ve|'d|’d|'ll|’ll)?\s+{_COND_ADVERB}(?P<verb>[\w'’-]+)")
_COND_YOU = _rx(rf"you(?:'re|’re| are)?\s+{_COND_ADVERB}(?P<verb>[\w'’-]+)")
_COND_UNSURE = _rx(
    r"(?:you(?:'re|’re| are)\s+(?:ever\s+)?)?(?:not sure|unsure|uncertain|in (?:any )?doubt)\b"
)
_COND_DOING = _rx(r"(?P<verb>[a-z]+)ing\b")
# a standing marker after the action ("reply in English from now on")
_MARKER_AFTER = _rx(
    r"\b(?:from now on|from here on(?: out)?|going forward|moving forward|henceforth|"
    r"in (?:the )?future|by default)\b"
)
# words that say the action is for every time ("… any more", "… every time")
_RECURRING = _rx(
    r"\b(?:at all times|every time|each time|any ?more|whenever|"
    r"in (?:all|every|each) (?:of )?(?:your|my|the)?\b)"
)
_MARKER_INSIDE = _rx(
    r"[\s,]*\b(?:from now on|from here on(?: out)?|going forward|moving forward|"
    r"henceforth|by default)\b(?=[\s,])"
)
_TAIL_MARKER = _rx(
    r"[\s,]*\b(?:from now on|from here on(?: out)?|going forward|moving forward|"
    r"henceforth|in (?:the )?future|by default)$"
)
_TAIL_FILLER = _rx(
    r"[\s,]*\b(?:lol|haha|hah|lmao|thanks|thank you|thx|ty|please|pls|plz|ok|okay|btw|"
    r"though|ta)$"
)
# attributed to someone: "…, my instructor drilled that into me", "…, that's my motto"
_REPORTED = _rx(
    r"[,;:–—-]\s.*\b(?:said|says|told|tells|taught|teaches|drilled|swore|swears|"
    r"used to say|would say|likes to say|motto|mantra|saying)\b"
)
_TOKEN = re.compile(r"[\w'’-]+")
_LEADING_WORD = re.compile(r"(?P<word>[A-Za-z][\w'’-]*),\s+")
# "no more emoji", "no meetings before 10am": a thing the agent is to leave out
_NO_MORE = _rx(r"no (?:more )?(?!more\b)[\w'’-]+")


@dataclass(frozen=True)
class Instruction:
    """A standing instruction: ``text`` as the user put it without the markers and
    frames that make it one ("From now on, please reply in English" → "reply in
    English"; a condition stays: "when I say ship it, run the tests first"), and
    ``action``, the part of it from the action word on ("run the tests first")."""

    text: str
    action: str


def standing_instruction(
    sentence: str, *, among_people: bool = False, agent: str | None = None
) -> Instruction | None:
    """The standing instruction ``sentence`` gives the agent, or None when it gives none
    (see the module doc). ``among_people``: said in a chat between named speakers, where
    a name addressed (other than ``agent``'s) or "you should" is advice to the other
    person."""
    text = sentence.strip()
    masked = QUOTED.sub(_blank, text)
    if among_people and _addresses_someone(text, agent):
        return None
    end = _trimmed_end(masked)
    i, kinds, marked = _frames(masked, _skip(_LEAD, masked, 0), end)  # "from now on, …"
    if among_people and "should" in kinds:
        return None
    if masked.rstrip().endswith("?") and "ask" not in kinds:
        return None  # a question; "can you always …?" asks the agent to
    # "your replies should never …", "never forget to …": the frame is part of what it says
    start = min(kinds.get("output", i), kinds.get("standing", i))
    condition = _CONDITION.match(masked, i, end)
    if condition:
        if not _agent_condition(condition["cond"], among_people=among_people):
            return None
        marked, i = True, _skip(_FRAMES[0][1], masked, condition.end())
    marked = marked or bool(_MARKER_AFTER.search(masked, i, end))
    standing = marked or "standing" in kinds or bool(_RECURRING.search(masked, i, end))
    action = _action(masked, i, end, kinds, standing)
    if action is None or _LIFE.search(masked, i, end):
        return None
    verb, verb_end = action
    if _REPORTED.search(masked, verb_end, end):
        return None
    if among_people and verb == "let":
        return None  # "let me know if you need anything": how friends talk, not a rule
    words = [_base(w) for w in _TOKEN.findall(masked, i, end)]
    always = {_base(w) for w in _TOKEN.findall(masked, i, verb_end)} & _STANDING_WORDS
    if not (standing or always or _quitting(verb, masked, verb_end, end)):
        return None  # a one-off request: "send this to Bob"
    if not (marked or kinds.keys() & _TO_AGENT or _about_work(words)):
        return None  # a tip for anyone: "never put metal in the microwave"
    tail = _TAIL_MARKER.search(masked, verb_end, end)
    stop = tail.start() if tail else end
    # a marker inside ("keep answers short from now on, no jargon") says no more than that
    inside = _MARKER_INSIDE.search(masked, verb_end, stop)
    lo, hi = inside.span() if inside else (stop, stop)
    said = (text[start:lo] + text[hi:stop]).strip(" ,;:-")
    return Instruction(said, (text[i:lo] + text[hi:stop]).strip(" ,;:-")) if said else None


def _blank(match: re.Match[str]) -> str:
    """A quoted span with its words blanked out (its quote marks and length kept)."""
    quoted = match[0]
    return quoted[0] + "_" * (len(quoted) - 2) + quoted[-1] if len(quoted) > 1 else quoted


def _skip(pattern: re.Pattern[str], text: str, i: int) -> int:
    match = pattern.match(text, i)
    return match.end() if match else i


def _trimmed_end(masked: str) -> int:
    """Where ``masked`` ends without trailing punctuation, emoji and fillers ("lol",
    "please", "thanks"); a closing quote mark or bracket stays."""
    end = len(masked)
    while True:
        while end and not masked[end - 1].isalnum() and masked[end - 1] not in "\"'“”‘’)]%_":
            end -= 1
        filler = _TAIL_FILLER.search(masked, 0, end)
        if not filler:
            return end
        end = filler.start()


def _frames(masked: str, i: int, end: int) -> tuple[int, dict[str, int], bool]:
    """Past the markers and frames at ``i``: where the rest begins, the kinds of frames
    read (with where each begins) and whether a marker says the instruction is
    standing. A single leading "Word, " — the agent's name or a word like "Honestly," —
    is passed over too."""
    kinds: dict[str, int] = {}
    marked = False
    for _ in range(6):
        marker = _MARKER.match(masked, i, end)
        if marker:
            i, marked = marker.end(), True
            continue
        frame = next(((k, m) for k, p in _FRAMES if (m := p.match(masked, i, end))), None)
        if frame:
            kinds.setdefault(frame[0], i)
            i = frame[1].end()
            continue
        word = _LEADING_WORD.match(masked, i, end)
        if word and word["word"].lower() not in _STANDING_WORDS and not kinds:
            i = word.end()
            continue
        break
    return i, kinds, marked


def _addresses_someone(text: str, agent: str | None) -> bool:
    """Whether ``text`` speaks to someone by name ("…, Mel!", "Jon, never …"), other
    than ``agent``."""
    names = set(addressed(text))
    lead = _LEADING_WORD.match(text)
    if lead and is_name_word(lead["word"]) and lead["word"].lower() not in _ADVERBS:
        names.add(lead["word"])
    return bool({n.casefold() for n in names} - {(agent or "").casefold()})


def _agent_condition(condition: str, *, among_people: bool) -> bool:
    """Whether a condition ("when …,") is one the agent acts on: something the user does
    ("I say ship it", "I ask for a summary"), the agent's own work ("you draft an email",
    "you're summarizing", "writing SQL"), its doubt ("you're not sure"), or something
    of the user's or of the agent's work that happens ("my flight is delayed", "a
    meeting runs over"). Between people, only the user saying or sending something."""
    mine = _COND_I.match(condition)
    if mine:
        return not among_people or _base(mine["verb"]) in _TELL_VERBS
    if among_people:
        return False
    if _COND_UNSURE.match(condition):
        return True
    yours = _COND_YOU.match(condition)
    if yours:  # "you draft an email", "you're summarizing a meeting"
        verb = _base(yours["verb"])
        stem = verb[:-3] if verb.endswith("ing") else None
        return agent_verb(verb) if stem is None else any(map(agent_verb, _lemmas(stem)))
    doing = _COND_DOING.match(condition)  # "writing SQL"
    if doing and any(map(agent_verb, _lemmas(doing["verb"]))):
        return True
    words = [_base(w) for w in _TOKEN.findall(condition)]
    return words[:1] == ["my"] or any(w in WORK_NOUNS for w in words[:3])


def _action(
    masked: str, i: int, end: int, kinds: dict[str, int], standing: bool
) -> tuple[str, int] | None:
    """The action word at ``i`` (past "please", "always", "don't ever", …) and where it
    ends, or None when the words at ``i`` are no imperative of the agent's work."""
    tokens = list(_TOKEN.finditer(masked, i, end))
    k = 0
    while k < len(tokens) and _base(tokens[k][0]) in _ADVERBS:
        k += 1
    if k >= len(tokens):
        return None
    verb, after = _base(tokens[k][0]), [_base(t[0]) for t in tokens[k + 1 : k + 4]]
    if verb == "no" and standing and _NO_MORE.match(masked, tokens[k].start()):
        return verb, tokens[k].end()  # "new rule: no meetings before 10am"
    if verb == "be":
        rest = [w for w in after if w not in _DEGREE]
        fits = "output" in kinds or bool(rest and rest[0] in _STYLE)
        return (verb, tokens[k].end()) if fits else None
    if verb == "let":
        return (verb, tokens[k].end()) if after[:1] in (["me"], ["us"]) else None
    if verb in _SPLIT_PREFIXES and after[:1] and agent_verb(f"{verb}-{after[0]}"):
        verb, k = after[0], k + 1  # "double check", written apart
    elif not agent_verb(verb):
        return None
    before = {_base(t[0]) for t in tokens[:k]}
    ongoing = verb in _ONGOING and after[:1] and after[0].endswith("ing")
    if ongoing and before & _STANDING_WORDS and not standing:
        return None  # "never stop learning", "always keep pushing"
    return verb, tokens[k].end()


def _quitting(verb: str, masked: str, verb_end: int, end: int) -> bool:
    """Whether the action is to stop doing something ("stop adding disclaimers"): for
    good, as "never" would say."""
    following = _TOKEN.search(masked, verb_end, end)
    return verb in ("stop", "quit") and following is not None and following[0].endswith("ing")


def _about_work(words: list[str]) -> bool:
    """Whether an action's ``words`` are about the user or the agent's work: "me", "my",
    a verb only an assistant's work has ("summarize", "cc"; also as "summarizing") or a
    thing it works on ("emails", "meetings", "code", "your replies"); "be" before a
    manner of answering ("be concise") is one."""
    for n, word in enumerate(words):
        if word in _USER_WORDS or word in WORK_NOUNS or word in WORK_VERBS:
            return True
        if word == "be" and any(w in _STYLE for w in words[n + 1 : n + 4]):
            return True
        stem = re.sub(r"(?:ing|ed|es|s)$", "", word)
        if stem != word and any(lemma in WORK_VERBS for lemma in _lemmas(stem)):
            return True
    return False


def agent_verb(word: str) -> bool:
    """Whether ``word`` is the base form of a verb of an assistant's work (a form with
    "re-" / "double-" / "auto-" in front counts: "resend", "double-book"; so does the
    first part of "reply-all")."""
    word = _base(word)
    if word in AGENT_VERBS:
        return True
    head, dash, rest = word.partition("-")
    if dash and (head in AGENT_VERBS or (f"{head}-" in _VERB_PREFIXES and rest in AGENT_VERBS)):
        return True
    return any(word.startswith(p) and word[len(p) :] in AGENT_VERBS for p in ("re", "auto"))


def _base(word: str) -> str:
    return word.lower().replace("’", "'")


def _lemmas(stem: str) -> list[str]:
    """Base forms an "-ing" form's ``stem`` may come from: "writ" → "write",
    "plann" → "plan", "send" → "send"."""
    out = [stem, f"{stem}e"]
    if len(stem) > 2 and stem[-1] == stem[-2]:
        out.append(stem[:-1])
    return out


__all__ = [
    "AGENT_VERBS",
    "QUOTED",
    "WORK_NOUNS",
    "WORK_VERBS",
    "Instruction",
    "agent_verb",
    "standing_instruction",
]
