"""BERT WordPiece tokenization in pure Python (layer: providers).

memloci's bundled encoders (bge-small-en, MiniLM, the MiniLM cross-encoder) all ship a
HuggingFace ``tokenizer.json`` of one kind: ``BertNormalizer`` (clean text, space out CJK
ideographs, lower-case and strip accents), ``BertPreTokenizer`` (split on whitespace,
isolate punctuation), a ``WordPiece`` model with the ``##`` continuing prefix, and a
``[CLS] A [SEP]`` / ``[CLS] A [SEP] B [SEP]`` template. This module reads such a file and
gives the same ids, type ids and mask as the ``tokenizers`` package (a test encodes
thousands of texts with both), so the core install needs neither it nor the
``huggingface-hub`` it pulls in. A ``tokenizer.json`` of another kind is refused.

Characters are classified with Python's :mod:`unicodedata` (Unicode 14.0 on Python
3.11); ``tokenizers`` classifies punctuation, nonspacing marks and control/format
characters with Unicode 8.0 tables and treats an unassigned character as a letter (so
does this module). The 503 characters added to those categories since, or moved
(U+166D, U+1734), are split off, stripped or dropped here and kept inside words there:
Arabic Quranic marks, Siddham signs, medieval punctuation (U+2E43–U+2E5D), historic
scripts, none in ordinary text. ``tests/unit/test_wordpiece.py`` lists them.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memloci.errors import ProviderError

HINT = "use a BERT-family tokenizer.json (BertNormalizer, BertPreTokenizer, WordPiece)"

# Rust's char::is_whitespace (Unicode White_Space), which tokenizers uses
_WHITESPACE = frozenset(
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007"
    "\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
# the CJK blocks BertNormalizer spaces out (as tokenizers spells them)
_CJK = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B920, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)
_OTHER = frozenset(("Cc", "Cf", "Co", "Cs"))  # not Cn: unassigned characters stay
_WORD_CACHE_SIZE = 65536


def _is_control(char: str) -> bool:
    """BertNormalizer drops NUL, U+FFFD and "other" characters (but tab, LF, CR)."""
    return char in "\x00\ufffd" or (char not in "\t\n\r" and unicodedata.category(char) in _OTHER)


def _is_cjk(char: str) -> bool:
    code = ord(char)
    return any(low <= code <= high for low, high in _CJK)


def _is_punctuation(char: str) -> bool:
    """ASCII punctuation (``$``, ``+``, ``^``… too) or a Unicode ``P*`` character."""
    code = ord(char)
    if 33 <= code <= 47 or 58 <= code <= 64 or 91 <= code <= 96 or 123 <= code <= 126:
        return True
    return unicodedata.category(char).startswith("P")


# ASCII text (most of it) goes through one translate table and one regex
_ASCII_CLEAN = {
    c: None if _is_control(chr(c)) else " " if chr(c) in _WHITESPACE else chr(c) for c in range(128)
}
_ASCII_PUNCT = "".join(chr(c) for c in range(128) if _is_punctuation(chr(c)))
_ASCII_WORDS = re.compile(f"[{re.escape(_ASCII_PUNCT)}]|[^{re.escape(_ASCII_PUNCT)} ]+")


def _normalize(text: str, lowercase: bool, strip_accents: bool, cjk: bool) -> str:
    """BertNormalizer (clean_text on) for text with non-ASCII characters."""
    out: list[str] = []
    for char in text:
        if _is_control(char):
            continue
        if char in _WHITESPACE:
            out.append(" ")
        elif cjk and _is_cjk(char):
            out.append(f" {char} ")
        else:
            out.append(char)
    cleaned = "".join(out)
    if strip_accents:
        cleaned = "".join(
            c for c in unicodedata.normalize("NFD", cleaned) if unicodedata.category(c) != "Mn"
        )
    if lowercase:  # char by char: no final-sigma rule, as tokenizers does it
        cleaned = cleaned.lower() if "Σ" not in cleaned else "".join(c.lower() for c in cleaned)
    return cleaned


def _split(text: str) -> list[str]:
    """BertPreTokenizer: whitespace-separated words, each punctuation mark its own."""
    words: list[str] = []
    word: list[str] = []
    for char in text:
        if char in _WHITESPACE:
            if word:
                words.append("".join(word))
                word = []
        elif _is_punctuation(char):
            if word:
                words.append("".join(word))
                word = []
            words.append(char)
        else:
            word.append(char)
    if word:
        words.append("".join(word))
    return words


@dataclass(frozen=True, slots=True)
class Encoding:
    """One encoded text (or pair): token ids, type ids (0 first, 1 second), mask."""

    ids: list[int]
    type_ids: list[int]

    @property
    def attention_mask(self) -> list[int]:
        return [1] * len(self.ids)


class WordPieceTokenizer:
    """A BERT ``tokenizer.json`` read by :meth:`from_file`; truncates to ``max_length``
    tokens (specials included; pairs cut longest first, as ``tokenizers`` does), never pads.
    """

    def __init__(
        self,
        vocab: dict[str, int],
        *,
        unk: str,
        prefix: str,
        max_chars: int,
        cls: int,
        sep: int,
        specials: dict[str, int],
        lowercase: bool,
        strip_accents: bool,
        cjk: bool,
        max_length: int,
    ) -> None:
        if max_length < 3:
            raise ProviderError(f"max_length must be at least 3, got {max_length}")
        self._vocab, self._prefix, self._max_chars = vocab, prefix, max_chars
        self._unk, self._cls, self._sep = vocab[unk], cls, sep
        self._specials = specials
        self._special_re = (
            re.compile("|".join(re.escape(s) for s in sorted(specials, key=len, reverse=True)))
            if specials
            else None
        )
        self._lowercase, self._strip_accents, self._cjk = lowercase, strip_accents, cjk
        self.max_length = max_length
        self._words: dict[str, list[int]] = {}

    @classmethod
    def from_file(
        cls, path: str | Path, *, max_length: int, hint: str | None = None
    ) -> WordPieceTokenizer:
        """Read a HuggingFace ``tokenizer.json`` of the BERT family, or a
        :class:`ProviderError` naming what is not (``hint``: where to get a good one)."""
        try:
            spec = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ProviderError(
                f"cannot read the tokenizer {str(path)!r}: {exc}", hint=hint or HINT
            ) from exc
        try:
            return cls._from_spec(spec, max_length)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ProviderError(
                f"{str(path)!r} is not a BERT WordPiece tokenizer.json ({exc!r})", hint=HINT
            ) from exc

    @classmethod
    def _from_spec(cls, spec: dict[str, Any], max_length: int) -> WordPieceTokenizer:
        model, norm = spec["model"], spec["normalizer"]
        pre, post = spec["pre_tokenizer"], spec["post_processor"]

        def refuse(what: str, found: object) -> ProviderError:
            return ProviderError(f"unsupported tokenizer.json: {what} is {found!r}", hint=HINT)

        if model.get("type") != "WordPiece":
            raise refuse("the model", model.get("type"))
        if not isinstance(norm, dict) or norm.get("type") != "BertNormalizer":
            raise refuse("the normalizer", norm and norm.get("type"))
        if not norm.get("clean_text", True):
            raise refuse("clean_text", False)
        if not isinstance(pre, dict) or pre.get("type") != "BertPreTokenizer":
            raise refuse("the pre-tokenizer", pre and pre.get("type"))
        vocab = {str(k): int(v) for k, v in model["vocab"].items()}
        specials = {}
        for token in spec.get("added_tokens") or ():
            if token.get("normalized") or token.get("lstrip") or token.get("rstrip"):
                raise refuse("an added token", token.get("content"))
            if token.get("single_word"):
                raise refuse("a single-word added token", token.get("content"))
            specials[str(token["content"])] = int(token["id"])
        cls_id, sep_id = cls._template(post)
        lowercase = bool(norm.get("lowercase", True))
        strip = norm.get("strip_accents")
        if model["unk_token"] not in vocab:
            raise refuse("the unknown token", model["unk_token"])
        return cls(
            vocab,
            unk=model["unk_token"],
            prefix=model.get("continuing_subword_prefix") or "##",
            max_chars=int(model.get("max_input_chars_per_word", 100)),
            cls=cls_id,
            sep=sep_id,
            specials=specials,
            lowercase=lowercase,
            strip_accents=lowercase if strip is None else bool(strip),
            cjk=bool(norm.get("handle_chinese_chars", True)),
            max_length=max_length,
        )

    @staticmethod
    def _template(post: dict[str, Any]) -> tuple[int, int]:
        """The [CLS] and [SEP] ids of a ``[CLS] A [SEP] (B [SEP])`` post-processor."""
        if post.get("type") == "BertProcessing":
            return int(post["cls"][1]), int(post["sep"][1])
        if post.get("type") != "TemplateProcessing":
            raise ProviderError(f"unsupported post-processor {post.get('type')!r}", hint=HINT)

        def shape(items: list[dict[str, Any]]) -> list[tuple[str, int]]:
            return [
                (f"${item['Sequence']['id']}", item["Sequence"]["type_id"])
                if "Sequence" in item
                else (item["SpecialToken"]["id"], item["SpecialToken"]["type_id"])
                for item in items
            ]

        single, pair = shape(post["single"]), shape(post["pair"])
        cls_name, sep_name = single[0][0], single[-1][0]
        if single != [(cls_name, 0), ("$A", 0), (sep_name, 0)] or pair != [
            (cls_name, 0),
            ("$A", 0),
            (sep_name, 0),
            ("$B", 1),
            (sep_name, 1),
        ]:
            raise ProviderError("unsupported template: not [CLS] A [SEP] B [SEP]", hint=HINT)
        tokens = post["special_tokens"]
        return int(tokens[cls_name]["ids"][0]), int(tokens[sep_name]["ids"][0])

    # -- encoding ------------------------------------------------------------------------

    def tokenize(self, text: str) -> list[int]:
        """The word-piece ids of ``text`` (no special tokens, no truncation)."""
        if self._special_re is None or not any(s in text for s in self._specials):
            return self._pieces(text)
        ids: list[int] = []
        start = 0
        for match in self._special_re.finditer(text):
            ids += self._pieces(text[start : match.start()])
            ids.append(self._specials[match.group()])
            start = match.end()
        return ids + self._pieces(text[start:])

    def _pieces(self, text: str) -> list[int]:
        if text.isascii():
            clean = text.translate(_ASCII_CLEAN)
            words: list[str] = _ASCII_WORDS.findall(clean.lower() if self._lowercase else clean)
        else:
            words = _split(_normalize(text, self._lowercase, self._strip_accents, self._cjk))
        ids: list[int] = []
        cache = self._words
        for word in words:
            hit = cache.get(word)
            if hit is None:
                hit = self._wordpiece(word)
                if len(cache) >= _WORD_CACHE_SIZE:
                    cache.clear()
                cache[word] = hit
            ids += hit
        return ids

    def _wordpiece(self, word: str) -> list[int]:
        """Greedy longest-match-first pieces of one word, or [UNK] for all of it."""
        if len(word) > self._max_chars:
            return [self._unk]
        vocab, prefix = self._vocab, self._prefix
        ids: list[int] = []
        start = 0
        while start < len(word):
            end = len(word)
            while end > start:
                piece = word[start:end] if start == 0 else prefix + word[start:end]
                found = vocab.get(piece)
                if found is not None:
                    ids.append(found)
                    break
                end -= 1
            else:
                return [self._unk]
            start = end
        return ids

    def encode(self, text: str, pair: str | None = None) -> Encoding:
        """``[CLS] text [SEP]`` or ``[CLS] text [SEP] pair [SEP]``, truncated."""
        first = self.tokenize(text)
        if pair is None:
            first = first[: self.max_length - 2]
            return Encoding([self._cls, *first, self._sep], [0] * (len(first) + 2))
        second = self.tokenize(pair)
        n1, n2 = _longest_first(len(first), len(second), self.max_length - 3)
        ids = [self._cls, *first[:n1], self._sep, *second[:n2], self._sep]
        return Encoding(ids, [0] * (n1 + 2) + [1] * (n2 + 1))

    def encode_batch(self, items: Iterable[str | tuple[str, str]]) -> list[Encoding]:
        """:meth:`encode` of each text or (text, pair)."""
        return [self.encode(i) if isinstance(i, str) else self.encode(*i) for i in items]


def _longest_first(n1: int, n2: int, budget: int) -> tuple[int, int]:
    """How many tokens of each sequence a pair keeps (tokenizers' LongestFirst)."""
    if n1 + n2 <= budget:
        return n1, n2
    short = min(n1, n2)
    keep_long = short if short > budget else max(short, budget - short)
    if short + keep_long > budget:
        short, keep_long = budget // 2, budget // 2 + budget % 2
    return (keep_long, short) if n1 > n2 else (short, keep_long)


__all__ = ["Encoding", "WordPieceTokenizer"]
