"""Knowledge documents (layer: service helpers): find files, read them, split them into chunks.

The knowledge tier is a read-only RAG store beside the memories: text, markdown and
reStructuredText files are split into chunks of about :data:`TARGET_CHARS` characters
(with :data:`OVERLAP_CHARS` of overlap inside a section), each keeping its heading path
("Guide > Install > Linux"). Markdown and reST are split on headings first, then on
paragraphs (a fenced code block stays whole); other text on paragraphs. Offsets point
into the decoded text with line endings normalised to ``\\n``. Nothing here touches the
store; :mod:`memloci.service.knowledge` does.
"""

from __future__ import annotations

import codecs
import hashlib
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from fnmatch import fnmatchcase
from pathlib import Path, PurePosixPath
from stat import S_ISREG
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from memloci.context import estimate_tokens
from memloci.errors import NotFoundError, ValidationError
from memloci.models import ALPHABET, KnowledgeHit

DEFAULT_GLOBS = ("*.md", "*.txt", "*.rst")
TARGET_CHARS = 800
OVERLAP_CHARS = 100
MAX_FILE_BYTES = 10_000_000
MARKDOWN_SUFFIXES = frozenset({".md", ".markdown", ".mdx"})
RST_SUFFIXES = frozenset({".rst", ".rest"})
SKIP_DIRS = frozenset({"node_modules", "__pycache__", "venv"})
COLLECTION_MAX = 100
GONE = "the file is gone"  # why a folder's source was removed: its file was deleted
UNREADABLE = "cannot read it"  # why a file is skipped when reading it failed (not its content)
PathLike = str | os.PathLike[str]


# ---------------------------------------------------------------------- results
class KnowledgeFile(BaseModel):
    """What ``add_knowledge`` did with one file (``reason`` says why it was skipped)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    path: str
    action: Literal["added", "updated", "unchanged", "skipped", "removed"]
    source_id: str | None = None
    chunks: int = 0
    reason: str | None = None

    @field_validator("path")
    @classmethod
    def _printable(cls, value: str) -> str:  # a file name that is not UTF-8
        return printable_path(value)


class KnowledgeReport(BaseModel):
    """The outcome of ``add_knowledge``: per-file results and their totals."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    namespace: str
    collection: str
    embedding_model: str | None = None
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    skipped: int = 0
    removed: int = 0  # sources dropped: a folder's files deleted since, files now unreadable
    chunks: int = 0  # chunks written (added + updated files)
    files: list[KnowledgeFile] = Field(default_factory=list)

    @classmethod
    def of(
        cls, namespace: str, collection: str, model: str | None, files: list[KnowledgeFile]
    ) -> KnowledgeReport:
        kinds = ("added", "updated", "unchanged", "skipped", "removed")
        count = {a: sum(f.action == a for f in files) for a in kinds}
        return cls(
            namespace=namespace,
            collection=collection,
            embedding_model=model,
            files=files,
            chunks=sum(f.chunks for f in files if f.action in ("added", "updated")),
            **count,
        )


# ---------------------------------------------------------------------- inputs
def check_collection(value: object) -> str:
    """A collection name: 1–100 characters, no control characters, no outer spaces."""
    if (
        not isinstance(value, str)
        or not value.strip()
        or value != value.strip()
        or len(value) > COLLECTION_MAX
        or any(ord(ch) < 32 for ch in value)
    ):
        raise ValidationError(
            f"invalid collection name {value!r}",
            hint=f"give a name of 1–{COLLECTION_MAX} characters, e.g. docs or faq",
        )
    return value


def check_globs(values: Sequence[str] | str | None) -> tuple[str, ...]:
    if values is None:
        return DEFAULT_GLOBS
    globs = (values,) if isinstance(values, str) else tuple(values)
    if not globs or any(not isinstance(g, str) or not g.strip() for g in globs):
        raise ValidationError("glob patterns must be non-empty text", hint="e.g. '*.md'")
    return tuple(g.strip() for g in globs)


def _matches(rel: PurePosixPath, globs: Sequence[str]) -> bool:
    for pattern in globs:
        if "/" in pattern:
            if rel.match(pattern):
                return True
        elif fnmatchcase(rel.name.lower(), pattern.lower()):
            return True
    return False


def collect_files(paths: PathLike | Sequence[PathLike], globs: Sequence[str]) -> list[Path]:
    """The files to add, absolute and in a stable order: files named explicitly, plus the
    files under named folders matching ``globs`` (hidden files and folders are skipped).

    Raises :class:`NotFoundError` naming every missing path before anything else happens.
    """
    items = [paths] if isinstance(paths, str | os.PathLike) else list(paths)
    if not items:
        raise ValidationError("no paths given", hint="name files or folders to add")
    roots = [Path(os.fspath(p)).expanduser() for p in items]
    missing = [str(p) for p in roots if not p.exists()]
    if missing:
        raise NotFoundError(
            f"no such file or folder: {', '.join(missing)}",
            hint="check the paths; nothing was added",
            missing=missing,
        )
    out: dict[Path, None] = {}
    for root in roots:
        if root.is_dir():
            for path in _walk(root.resolve(), globs):
                out.setdefault(path)
        else:
            out.setdefault(root.resolve())
    return list(out)


def _walk(root: Path, globs: Sequence[str]) -> Iterator[Path]:
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIP_DIRS)
        for name in sorted(files):
            path = Path(folder) / name
            rel = PurePosixPath(path.relative_to(root).as_posix())
            if not name.startswith(".") and _matches(rel, globs) and path.is_file():
                yield path


# ---------------------------------------------------------------------- reading
@dataclass(frozen=True)
class Document:
    """A decoded text file: ``kind`` picks the splitter."""

    path: Path
    text: str
    kind: Literal["markdown", "rst", "text"]
    content_hash: str  # sha256 of the raw bytes
    mtime: datetime
    size: int


def read_document(path: Path) -> Document | str:
    """The file as a :class:`Document`, or why it is skipped: not a regular file (a pipe,
    a device), a name that is not UTF-8, too large, binary (a NUL byte anywhere), a PDF,
    neither UTF-8 nor UTF-16 after a byte-order mark."""
    if path.suffix.lower() == ".pdf":
        return "PDF is not supported: convert it to text or markdown first"
    if not _utf8(str(path)):
        return "its name is not UTF-8 text: rename it"
    try:  # without blocking on a pipe: it is refused, not waited on
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as fh:
            stat = os.fstat(fh.fileno())
            if not S_ISREG(stat.st_mode):
                return "not a regular file (a pipe, a device or a socket)"
            raw = fh.read(MAX_FILE_BYTES + 1)  # bounded, whatever the size said
    except OSError as exc:
        return f"{UNREADABLE}: {exc.strerror or exc}"
    if len(raw) > MAX_FILE_BYTES:
        return f"larger than {MAX_FILE_BYTES // 1_000_000} MB"
    if raw.startswith(b"%PDF"):
        return "PDF is not supported: convert it to text or markdown first"
    binary = "binary file (only text, markdown and reST files are supported)"
    utf16 = raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE))
    if not utf16 and b"\x00" in raw:  # anywhere: no text holds one (nor PostgreSQL text)
        return binary
    text, why = _decode(raw, utf16)
    if text is None:
        return why
    if "\x00" in text:
        return binary
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    suffix = path.suffix.lower()
    kind: Literal["markdown", "rst", "text"] = (
        "markdown" if suffix in MARKDOWN_SUFFIXES else "rst" if suffix in RST_SUFFIXES else "text"
    )
    return Document(
        path=path,
        text=text,
        kind=kind,
        content_hash=hashlib.sha256(raw).hexdigest(),
        mtime=datetime.fromtimestamp(stat.st_mtime, UTC),
        size=len(raw),
    )


def _decode(raw: bytes, utf16: bool) -> tuple[str, str] | tuple[None, str]:
    """(text, "") from UTF-8 (a byte-order mark dropped) or from UTF-16 after its
    byte-order mark (what Windows tools write), else (None, why not)."""
    try:
        return raw.decode("utf-16" if utf16 else "utf-8-sig"), ""
    except UnicodeDecodeError:
        return None, "not UTF-16 text, though it starts like it" if utf16 else "not UTF-8 text"


def _utf8(text: str) -> bool:
    """Whether ``text`` is UTF-8 text: a file name that is not decodes to lone surrogates."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def printable_path(path: str) -> str:
    """``path`` as text that can be stored and printed: the bytes of a name that is not
    UTF-8 shown as ``\\xe9`` escapes."""
    if _utf8(path):
        return path
    try:
        return os.fsencode(path).decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a lone surrogate that is no escaped byte
        return path.encode("utf-8", "backslashreplace").decode("utf-8")


def source_id(path: str) -> str:
    """A stable 8-character id (A–Z a–z 0–9) for a source path (any text: a name that
    is not UTF-8 holds lone surrogates)."""
    digest = hashlib.sha256(path.encode("utf-8", "surrogatepass")).digest()
    value = int.from_bytes(digest[:12], "big")
    out = []
    for _ in range(8):
        value, digit = divmod(value, len(ALPHABET))
        out.append(ALPHABET[digit])
    return "".join(out)


# ---------------------------------------------------------------------- sections
@dataclass(frozen=True)
class Section:
    heading: str  # heading path, " > "-joined ("" before the first heading)
    start: int  # body span in the text
    end: int


@dataclass(frozen=True)
class Piece:
    """A chunk before it is stored: its text is ``text[start:end]`` of the document."""

    text: str
    heading: str
    start: int
    end: int


_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_NOT_SETEXT_TEXT = re.compile(r"^ {0,3}([-*+>|]|\d+[.)])( |$)")
_RST_ADORN = re.compile(r"^([=\-`:'\"~^_*+#<>.])\1{2,}[ \t]*$")


def _lines(text: str) -> list[tuple[int, str]]:
    """(offset, line without its newline) for each line."""
    out, pos = [], 0
    for line in text.split("\n"):
        out.append((pos, line))
        pos += len(line) + 1
    return out


class _Headings:
    """A heading stack that closes sections as headings arrive."""

    def __init__(self, text_len: int, start: int = 0) -> None:
        self.stack: list[tuple[int, str]] = []
        self.sections: list[Section] = []
        self.body = start
        self.end = text_len
        self.title = ""

    def heading(self, level: int, name: str, line_start: int, body_start: int) -> None:
        self.sections.append(Section(self.path(), self.body, line_start))
        while self.stack and self.stack[-1][0] >= level:
            self.stack.pop()
        self.stack.append((level, name))
        if level == 1 and not self.title:
            self.title = name
        self.body = body_start

    def path(self) -> str:
        return " > ".join(name for _, name in self.stack)

    def finish(self) -> list[Section]:
        self.sections.append(Section(self.path(), self.body, self.end))
        return [s for s in self.sections if s.end > s.start]


def _front_matter(lines: list[tuple[int, str]]) -> tuple[int, str]:
    """(index of the first line after YAML front matter, its ``title:``), else (0, "")."""
    if not lines or lines[0][1].strip() != "---":
        return 0, ""
    title = ""
    for i, (_, line) in enumerate(lines[1:], start=1):
        if line.strip() in ("---", "..."):
            return i + 1, title
        if line.startswith("title:") and not title:
            title = line[6:].strip().strip("'\"")
    return 0, ""


def markdown_sections(text: str) -> tuple[str, list[Section]]:
    """(title, sections): ATX and setext headings outside code fences start sections."""
    lines = _lines(text)
    first, title = _front_matter(lines)
    start = lines[first][0] if first < len(lines) else len(text)
    heads = _Headings(len(text), start)
    fence = ""
    prev_text = False  # the previous line could be a setext heading's text
    for i in range(first, len(lines)):
        pos, line = lines[i]
        end = min(pos + len(line) + 1, len(text))
        if fence:
            if line.lstrip(" ").startswith(fence) and not line.strip().strip(fence[0]):
                fence = ""
            continue
        if m := _FENCE.match(line):
            fence, prev_text = m.group(1), False
            continue
        if m := _ATX.match(line):
            heads.heading(len(m.group(1)), (m.group(2) or "").strip(), pos, end)
            prev_text = False
            continue
        if prev_text and (m := _SETEXT.match(line)):
            ppos, pline = lines[i - 1]
            heads.heading(1 if m.group(1)[0] == "=" else 2, pline.strip(), ppos, end)
            prev_text = False
            continue
        prev_text = (
            bool(line.strip())
            and not _NOT_SETEXT_TEXT.match(line)
            and not (line.startswith(("    ", "\t")))
        )
    return title or heads.title, heads.finish()


def rst_sections(text: str) -> tuple[str, list[Section]]:
    """(title, sections): underlined (optionally overlined) titles start sections; levels
    follow the order in which adornment styles first appear."""
    lines = _lines(text)
    heads = _Headings(len(text))
    styles: list[tuple[str, bool]] = []
    i = 0
    while i < len(lines) - 1:
        pos, line = lines[i]
        under = lines[i + 1][1]
        name = line.strip()
        m = _RST_ADORN.match(under)
        if name and not _RST_ADORN.match(line) and m and len(under.rstrip()) >= len(name):
            over = i > 0 and lines[i - 1][1].rstrip() == under.rstrip()
            style = (m.group(1), over)
            if style not in styles:
                styles.append(style)
            start = lines[i - 1][0] if over else pos
            end = min(lines[i + 1][0] + len(under) + 1, len(text))
            heads.heading(styles.index(style) + 1, name, start, end)
            i += 2
            continue
        i += 1
    return heads.title, heads.finish()


# ---------------------------------------------------------------------- chunks
def _paragraphs(text: str, start: int, end: int, fences: bool) -> list[tuple[int, int]]:
    """Spans of blank-line separated paragraphs in ``text[start:end]`` (fenced code whole)."""
    spans: list[tuple[int, int]] = []
    para: int | None = None
    fence = ""
    for pos, line in _lines(text[start:end]):
        at = start + pos
        if fences and fence:
            if line.lstrip(" ").startswith(fence) and not line.strip().strip(fence[0]):
                fence = ""
            continue
        if fences and (m := _FENCE.match(line)):
            fence = m.group(1)
            para = at if para is None else para
            continue
        if not line.strip():
            if para is not None:
                spans.append((para, at))
                para = None
        elif para is None:
            para = at
    if para is not None:
        spans.append((para, end))
    return [_trim(text, s, e) for s, e in spans if text[s:e].strip()]


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+")


def _units(text: str, start: int, end: int, target: int) -> Iterator[tuple[int, int]]:
    """A paragraph as pieces of at most ``target`` characters: sentences, then words."""
    if end - start <= target:
        yield start, end
        return
    cuts = [m.end() for m in _SENTENCE_END.finditer(text, start, end)]
    pos = start
    for cut in [*cuts, end]:
        s, e = _trim(text, pos, cut)
        pos = cut
        while e - s > target:  # a very long sentence: cut at the last space before target
            space = text.rfind(" ", s + target // 2, s + target)
            split = space if space > s else s + target
            yield _trim(text, s, split)
            s, _ = _trim(text, split, e)
        if e > s:
            yield s, e


def split_text(
    text: str,
    sections: Sequence[Section],
    *,
    target: int = TARGET_CHARS,
    overlap: int = OVERLAP_CHARS,
    fences: bool = False,
) -> list[Piece]:
    """Pack each section's paragraphs into chunks of about ``target`` characters; a chunk
    after the first of its section starts up to ``overlap`` characters earlier (on a word
    boundary), repeating the end of the previous one."""
    pieces: list[Piece] = []
    for sec in sections:
        units = [
            u
            for s, e in _paragraphs(text, sec.start, sec.end, fences)
            for u in _units(text, s, e, target)
        ]
        i, first = 0, True
        while i < len(units):
            start, end = units[i]
            j = i + 1
            while j < len(units) and (
                units[j][1] - start <= target
                or (j == len(units) - 1 and units[j][1] - start <= target + target // 4)
            ):
                end = units[j][1]
                j += 1
            begin = start
            if not first and overlap > 0:
                back = max(sec.start, start - overlap)
                space = next((k for k in range(back, start) if text[k].isspace()), start)
                begin, _ = _trim(text, space, start) if space < start else (start, start)
            pieces.append(Piece(text[begin:end], sec.heading, begin, end))
            i, first = j, False
    return pieces


def chunk_document(
    doc: Document, *, target: int = TARGET_CHARS, overlap: int = OVERLAP_CHARS
) -> tuple[str, list[Piece]]:
    """(title, chunks) of a document; the title falls back to the file name."""
    text = doc.text
    if doc.kind == "markdown":
        title, sections = markdown_sections(text)
    elif doc.kind == "rst":
        title, sections = rst_sections(text)
    else:
        title, sections = "", [Section("", 0, len(text))]
    pieces = split_text(
        text, sections, target=target, overlap=overlap, fences=doc.kind == "markdown"
    )
    return title or doc.path.name, pieces


def embedding_text(title: str, piece: Piece) -> str:
    """What gets embedded for a chunk: its heading path (or the title), then the text."""
    context = piece.heading or title
    return f"{context}\n\n{piece.text}" if context else piece.text


# ---------------------------------------------------------------------- prompt
KNOWLEDGE_TITLE = "## Relevant Knowledge"


def knowledge_block(hits: Sequence[KnowledgeHit], *, budget: int | None = None) -> str:
    """Hits as a markdown block for a system prompt, best first, within ``budget`` tokens
    (estimated as in :mod:`memloci.context`); "" when there are none. Each entry names
    its source (file name and heading path) so the model can cite it."""
    entries: list[str] = []
    for n, hit in enumerate(hits, start=1):
        where = " › ".join(x for x in (Path(hit.path).name, hit.heading) if x)
        entry = f"[{n}] {where}\n{hit.text.strip()}"
        if budget is not None and estimate_tokens(_block([*entries, entry])) > budget:
            room = budget * 4 - len(_block([""])) - 1
            if not entries and room > len(where) + 8:  # the best hit, clipped, over nothing
                entries.append(entry[:room].rstrip() + "…")
            break
        entries.append(entry)
    return _block(entries) if entries else ""


def _block(entries: Sequence[str]) -> str:
    return "\n\n".join([KNOWLEDGE_TITLE, *entries])
