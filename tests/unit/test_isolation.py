"""Namespace and user isolation: nothing leaks across tenants or users, through any read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memloci import Memory
from memloci.errors import NotFoundError
from pgtest import both_backends

pytestmark = both_backends  # isolation is enforced in storage: prove it on both backends

RECIPES = ["hybrid", "fulltext", "vector"]


@pytest.fixture
def world(mem: Memory) -> dict[str, str]:
    """Tenant ``a`` with users alice and bob, tenant ``b`` with its own alice.
    Every memory mentions the vault so a leaking search would find it."""
    ids = {
        "a_alice": mem.remember(
            "Alice says the vault code is 1111", key="vault_code", user="alice", namespace="a"
        ),
        "a_bob": mem.remember(
            "Bob says the vault code is 2222", key="vault_code", user="bob", namespace="a"
        ),
        "a_shared": mem.remember(
            "Tenant a keeps the vault in the basement", key="motto", namespace="a"
        ),
        "b_alice": mem.remember(
            "Tenant b alice: the vault code is 3333", key="vault_code", user="alice", namespace="b"
        ),
        "b_shared": mem.remember(
            "Tenant b keeps the vault on the roof", key="motto", namespace="b"
        ),
    }  # fmt: skip
    out = {name: res.memory.id for name, res in ids.items()}
    out["a_alice_turn"] = mem.add(
        "alice: remind me about the vault tomorrow", user="alice", session="sa", namespace="a"
    ).id
    out["a_bob_turn"] = mem.add(
        "bob: did anyone move the vault?", user="bob", session="sb", namespace="a"
    ).id
    out["a_proc"] = mem.learn_procedure(
        "Never read vault codes aloud in tenant a", namespace="a"
    ).memory.id
    assert mem.flush(20)
    return out


def visible(world: dict[str, str], found: set[str]) -> set[str]:
    by_id = {v: k for k, v in world.items()}
    return {by_id.get(i, i) for i in found}


A_ALICE = {"a_alice", "a_shared", "a_alice_turn", "a_proc"}
A_BOB = {"a_bob", "a_shared", "a_bob_turn", "a_proc"}


@pytest.mark.parametrize("recipe", RECIPES)
def test_search_never_leaks_across_users_or_namespaces(
    mem: Memory, world: dict[str, str], recipe: str
) -> None:
    def found(**kw: object) -> set[str]:
        hits = mem.search("vault code", k=50, recipe=recipe, **kw)
        return visible(world, {h.memory.id for h in hits})

    assert found(user="alice", namespace="a") <= A_ALICE
    assert "a_alice" in found(user="alice", namespace="a")
    assert found(user="bob", namespace="a") <= A_BOB
    assert "a_bob" in found(user="bob", namespace="a")
    assert found(user="alice", namespace="b") <= {"b_alice", "b_shared"}
    assert "b_alice" in found(user="alice", namespace="b")
    assert found(user="carol", namespace="a") <= {"a_shared", "a_proc"}
    assert found(namespace="b") <= {"b_alice", "b_shared"}
    assert found(namespace="other") == set()
    both = found(user="alice", namespace=["a", "b"])  # named explicitly: shared reading
    assert {"a_alice", "b_alice"} <= both and "a_bob" not in both


def test_list_never_leaks(mem: Memory, world: dict[str, str]) -> None:
    def listed(**kw: object) -> set[str]:
        return visible(world, {n.id for n in mem.list(limit=100, include_forgotten=True, **kw)})

    assert listed(user="alice", namespace="a") == A_ALICE
    assert listed(user="bob", namespace="a") == A_BOB
    assert listed(user="alice", namespace="b") == {"b_alice", "b_shared"}
    assert listed(namespace="a") == A_ALICE | A_BOB
    assert listed() == set()  # the default namespace is empty


def test_get_and_history_are_bounded_by_namespace(mem: Memory, world: dict[str, str]) -> None:
    assert mem.get(world["a_alice"], namespace="a").content == "Alice says the vault code is 1111"
    for name in ("a_alice", "a_bob", "a_alice_turn"):
        with pytest.raises(NotFoundError):
            mem.get(world[name], namespace="b")
        with pytest.raises(NotFoundError):
            mem.history(world[name], namespace="b")
        with pytest.raises(NotFoundError):
            mem.get(world[name])  # default namespace
    with pytest.raises(NotFoundError):
        mem.history(world["b_alice"], namespace="a")


def test_lookup_never_leaks(mem: Memory, world: dict[str, str]) -> None:
    assert mem.lookup("vault_code", user="alice", namespace="a").id == world["a_alice"]
    assert mem.lookup("vault_code", user="bob", namespace="a").id == world["a_bob"]
    assert mem.lookup("vault_code", user="alice", namespace="b").id == world["b_alice"]
    assert mem.lookup("vault_code", user="carol", namespace="a") is None
    assert mem.lookup("vault_code", namespace="a") is None
    assert mem.lookup("vault_code") is None
    assert mem.lookup("motto", user="alice", namespace="a").id == world["a_shared"]
    assert mem.lookup("motto", user="bob", namespace="a").id == world["a_shared"]
    assert mem.lookup("motto", user="alice", namespace="b").id == world["b_shared"]


def test_context_never_leaks(mem: Memory, world: dict[str, str]) -> None:
    for prompt in (None, "what is the vault code?"):
        alice = mem.context(prompt, user="alice", namespace="a", budget=2000)
        assert world["a_alice"] in alice and world["a_shared"] in alice
        assert world["a_proc"] in alice
        for secret in ("2222", "3333", "roof", world["a_bob"], world["b_alice"]):
            assert secret not in alice
        bob = mem.context(prompt, user="bob", namespace="a", budget=2000)
        assert world["a_bob"] in bob and world["a_shared"] in bob
        for secret in ("1111", "3333", "roof", "remind me"):
            assert secret not in bob
        tenant_b = mem.context(prompt, user="alice", namespace="b", budget=2000)
        assert world["b_alice"] in tenant_b and world["b_shared"] in tenant_b
        for secret in ("1111", "2222", "basement", world["a_proc"]):
            assert secret not in tenant_b


def test_export_contains_only_its_namespace(
    mem: Memory, world: dict[str, str], tmp_path: Path
) -> None:
    mem.export(str(tmp_path / "a.jsonl"), namespace="a")
    mem.export(str(tmp_path / "b.jsonl"), namespace="b")

    def node_ids(ns: str) -> set[str]:
        records = [json.loads(line) for line in (tmp_path / f"{ns}.jsonl").read_text().splitlines()]
        for r in records:
            assert (r["node"] if r["kind"] == "node" else r).get("namespace", ns) == ns
        return {r["node"]["id"] for r in records if r["kind"] == "node"}

    assert visible(world, node_ids("a")) == A_ALICE | A_BOB
    assert visible(world, node_ids("b")) == {"b_alice", "b_shared"}
    text_b = (tmp_path / "b.jsonl").read_text()
    # the secrets as said: a bare "2222" can occur in a timestamp ("…48.522220Z")
    assert "code is 1111" not in text_b and "code is 2222" not in text_b


def test_writes_cannot_reach_into_another_namespace(mem: Memory, world: dict[str, str]) -> None:
    for call in (
        lambda: mem.update(world["a_alice"], "hijacked content", namespace="b"),
        lambda: mem.correct(world["a_alice"], "hijacked content", namespace="b"),
        lambda: mem.confirm(world["a_alice"], namespace="b"),
        lambda: mem.forget(world["a_alice"], namespace="b"),
        lambda: mem.purge(world["a_alice"], namespace="b"),
    ):
        with pytest.raises(NotFoundError):
            call()
    got = mem.get(world["a_alice"], namespace="a")
    assert got.is_current and got.version == 1 and got.times_confirmed == 0


def test_duplicates_are_not_shared_across_namespaces(mem: Memory, world: dict[str, str]) -> None:
    res = mem.remember("Tenant a keeps the vault in the basement", key="motto", namespace="c")
    assert res.action == "created" and res.memory.namespace == "c"
    assert mem.get(world["a_shared"], namespace="a").times_confirmed == 0


def test_session_memories_do_not_leak_to_other_users(mem: Memory, world: dict[str, str]) -> None:
    private = mem.remember(
        "Alice's surprise party plan for this chat", user="alice", session="sa",
        scope="session", namespace="a",
    )  # fmt: skip
    mem.flush()
    hits = mem.search("surprise party plan", user="bob", namespace="a", k=50)
    assert private.memory.id not in {h.memory.id for h in hits}
    assert private.memory.id not in {n.id for n in mem.list(user="bob", namespace="a")}
    assert private.memory.id not in mem.context(user="bob", namespace="a")


def test_session_memories_are_visible_inside_their_session(
    mem: Memory, world: dict[str, str]
) -> None:
    private = mem.remember(
        "Alice's surprise party plan for this chat", user="alice", session="sa",
        scope="session", namespace="a",
    )  # fmt: skip
    mem.flush()

    def ids(**kw: object) -> set[str]:
        return {h.memory.id for h in mem.search("surprise party plan", namespace="a", **kw)}

    assert private.memory.id in ids(user="alice", session="sa")
    assert private.memory.id not in ids(user="alice", session="other-chat")
    assert private.memory.id not in ids(user="bob", session="sb")
    found = mem.lookup("vault_code", user="alice", session="sa", namespace="a")
    assert found is not None and found.id == world["a_alice"]
