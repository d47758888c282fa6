"""The SQLite store's in-process vector cache: exact scan, Hamming pre-selection (its
word-by-word distance), masks, and the one-BLAS-thread limit it runs under."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from memloci.blas import BLAS
from memloci.storage.sqlite import vecindex
from memloci.storage.sqlite.vecindex import VectorIndex, _codes, _hamming

DIM = 384


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    mat = rng.standard_normal((n, DIM)).astype(np.float32)
    return mat / np.linalg.norm(mat, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def data() -> tuple[VectorIndex, np.ndarray]:
    mat = _unit(np.random.default_rng(7), 6000)
    index = VectorIndex(DIM)
    rows = [
        (i + 1, mat[i].tobytes(), "user" if i % 2 else "agent", f"u{i % 5}", "episodic")
        for i in range(len(mat))
    ]
    index.append("default", rows)
    return index, mat


def test_hamming_word_by_word_equals_the_row_sum() -> None:
    mat = _unit(np.random.default_rng(1), 500)
    codes = _codes(mat)
    q = _codes(mat[:1])[0]
    expected = np.bitwise_count(codes ^ q).sum(axis=1, dtype=np.int32)
    np.testing.assert_array_equal(_hamming(codes, q), expected)
    assert _hamming(codes, q)[0] == 0


def test_exact_and_preselected_search_agree_on_the_top(
    data: tuple[VectorIndex, np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    index, mat = data
    query = mat[42] + 0.05 * _unit(np.random.default_rng(3), 1)[0]
    query /= np.linalg.norm(query)
    exact, _ = index.search(["default"], query, 10)
    truth = np.argsort(-(mat @ query))[:10] + 1
    assert [r for r, _ in exact] == truth.tolist()
    monkeypatch.setattr(vecindex, "EXACT_MAX", 100)  # force the Hamming path
    monkeypatch.setattr(vecindex, "PRESELECT_MIN", 1500)
    approx, truncated = index.search(["default"], query, 10)
    assert truncated and approx[0][0] == 43  # the near-duplicate survives pre-selection
    np.testing.assert_allclose(approx[0][1], exact[0][1], rtol=1e-6)
    # masked (user) searches take the same path over the visible rows only
    mine, _ = index.search(["default"], query, 10, user="u2")
    visible = {i + 1 for i in range(len(mat)) if i % 2 == 0 or i % 5 == 2}
    assert mine and all(r in visible for r, _ in mine)


def test_search_holds_blas_at_one_thread_and_restores_it(
    data: tuple[VectorIndex, np.ndarray],
) -> None:
    index, mat = data
    api = BLAS._api if BLAS._probed else None
    seen: list[int] = []
    if api is None:
        BLAS._api, BLAS._probed = BLAS._probe(), True
        api = BLAS._api
    if api is None:
        pytest.skip("numpy is not linked against OpenBLAS here")
    before = api[1]()
    real_matmul = np.ndarray.__matmul__

    class Probe(np.ndarray):
        def __matmul__(self, other: object) -> object:
            seen.append(api[1]())
            return real_matmul(np.asarray(self), other)

    part = index._parts["default"]
    original = part.mat
    part.mat = original.view(Probe)
    try:
        index.search(["default"], mat[0], 5)
    finally:
        part.mat = original
    assert seen and all(n == 1 for n in seen)
    assert api[1]() == before
    # concurrent holders: the count is restored only when the last one leaves
    started, release = threading.Event(), threading.Event()

    def hold() -> None:
        with BLAS.limit(1):
            started.set()
            release.wait(5)

    worker = threading.Thread(target=hold)
    worker.start()
    started.wait(5)
    with BLAS.limit(1):
        assert api[1]() == 1
    assert api[1]() == 1  # the other holder is still inside
    release.set()
    worker.join()
    assert api[1]() == before
