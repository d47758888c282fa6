"""FTS5 match expressions → PostgreSQL tsquery SQL (layer: storage).

The search primitives take FTS5 syntax (what the retrieval layer writes: quoted terms
joined by ``OR`` / ``AND``). This translates the subset memloci uses — quoted phrases,
bare words, ``AND`` / ``OR`` / ``NOT``, implicit AND, parentheses and a trailing ``*``
prefix — into a tsquery built by ``phraseto_tsquery`` with the store's ``memloci`` text
search configuration, so the text is tokenised and stemmed exactly like the indexed
column. Anything else (column filters, unbalanced quotes or parentheses, a dangling
operator) is a :class:`~memloci.errors.ValidationError`, as FTS5 would reject it.
"""

from __future__ import annotations

import re

from memloci.errors import ValidationError
from memloci.storage.names import unaccented

CONFIG = "memloci"
_TOKEN = re.compile(r'\s*(?:(?P<phrase>"(?:[^"]|"")*")|(?P<word>[\w]+)|(?P<op>[()*]))', re.UNICODE)
_KEYWORDS = {"AND", "OR", "NOT"}


def _tokens(match: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    while pos < len(match):
        if match[pos:].strip() == "":
            break
        m = _TOKEN.match(match, pos)
        if m is None or m.end() == pos:
            raise ValidationError(
                f"bad full-text query: syntax error near {match[pos:].strip()[:20]!r}"
            )
        pos = m.end()
        if m.group("phrase") is not None:
            out.append(("term", m.group("phrase")[1:-1].replace('""', '"')))
        elif m.group("word") is not None:
            word = m.group("word")
            out.append(("kw", word) if word in _KEYWORDS else ("term", word))
        else:
            out.append(("op", m.group("op")))
    return out


class _Parser:
    """Recursive descent: or := and (OR and)*; and := not ([AND] not)*; not := prim (NOT prim)*."""

    def __init__(self, tokens: list[tuple[str, str]]) -> None:
        self.tokens = tokens
        self.pos = 0
        self.params: list[str] = []

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def fail(self) -> ValidationError:
        got = self.peek()
        near = got[1] if got else "end of query"
        return ValidationError(f"bad full-text query: syntax error near {near!r}")

    def parse(self) -> str:
        sql = self.or_()
        if self.peek() is not None:
            raise self.fail()
        return sql

    def or_(self) -> str:
        parts = [self.and_()]
        while self.peek() == ("kw", "OR"):
            self.pos += 1
            parts.append(self.and_())
        return parts[0] if len(parts) == 1 else "(" + " || ".join(parts) + ")"

    def and_(self) -> str:
        parts = [self.not_()]
        while True:
            tok = self.peek()
            if tok == ("kw", "AND"):
                self.pos += 1
            elif tok is None or tok[0] == "kw" or tok == ("op", ")"):
                break
            parts.append(self.not_())
        return parts[0] if len(parts) == 1 else "(" + " && ".join(parts) + ")"

    def not_(self) -> str:
        sql = self.primary()
        while self.peek() == ("kw", "NOT"):
            self.pos += 1
            sql = f"({sql} && !!{self.primary()})"
        return sql

    def primary(self) -> str:
        tok = self.peek()
        if tok is None:
            raise self.fail()
        if tok == ("op", "("):
            self.pos += 1
            sql = self.or_()
            if self.peek() != ("op", ")"):
                raise self.fail()
            self.pos += 1
            return sql
        if tok[0] != "term":
            raise self.fail()
        self.pos += 1
        if self.peek() == ("op", "*"):  # prefix: every word of the phrase, the last as a prefix
            self.pos += 1
            words = [w.lower() for w in re.findall(r"\w+", tok[1])]
            if not words:
                raise self.fail()
            # the stored words are unaccented when the store has unaccent (migration
            # 0012), as typed when not: either form matches
            phrases = list(
                dict.fromkeys(
                    " <-> ".join(f"'{w}'" for w in form) + ":*"
                    for form in (words, [unaccented(w) for w in words])
                )
            )
            self.params.append(
                " | ".join(f"({p})" for p in phrases) if len(phrases) > 1 else phrases[0]
            )
            return "to_tsquery('simple', %s)"
        self.params.append(tok[1])
        return f"phraseto_tsquery('{CONFIG}', %s)"


def to_tsquery_sql(match: str) -> tuple[str, list[str]]:
    """``(sql, params)``: a tsquery expression for an FTS5 match string (not blank)."""
    parser = _Parser(_tokens(match))
    return parser.parse(), parser.params


def is_disjunction(match: str) -> bool:
    """Whether ``match`` is single words joined by ``OR`` (what the retrieval layer
    writes): then the best rows per word are the best candidates for the whole query."""
    try:
        tokens = _tokens(match)
    except ValidationError:
        return False
    for i, (kind, text) in enumerate(tokens):
        if i % 2 == 0 and (kind != "term" or len(re.findall(r"\w+", text)) != 1):
            return False
        if i % 2 == 1 and (kind, text) != ("kw", "OR"):
            return False
    return len(tokens) % 2 == 1
