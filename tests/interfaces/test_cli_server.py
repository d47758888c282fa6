"""``memloci serve`` (a real subprocess) and ``memloci keys``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from rest_server import free_port
from typer.testing import CliRunner

from memloci.interfaces.cli import app

runner = CliRunner()


pytestmark = pytest.mark.usefixtures("clean_env")


def test_keys_create_list_revoke(tmp_path: Path) -> None:
    db = str(tmp_path / "k.db")
    made = runner.invoke(app, ["keys", "create", "bot", "-n", "team-a", "--db", db, "--json"])
    assert made.exit_code == 0, made.output
    key = json.loads(made.stdout)
    assert key["secret"].startswith("mlk_") and key["namespaces"] == ["team-a"]
    listed = json.loads(runner.invoke(app, ["keys", "list", "--db", db, "--json"]).stdout)
    assert [k["id"] for k in listed] == [key["id"]]
    assert "secret" not in listed[0] and key["secret"] not in json.dumps(listed)
    revoked = runner.invoke(app, ["keys", "revoke", key["id"], "--db", db])
    assert revoked.exit_code == 0 and "Revoked" in revoked.output
    assert json.loads(runner.invoke(app, ["keys", "list", "--db", db, "--json"]).stdout) == []


def test_keys_need_a_namespace_and_known_ids(tmp_path: Path) -> None:
    db = str(tmp_path / "k.db")
    r = runner.invoke(app, ["keys", "create", "bot", "--db", db])
    assert r.exit_code == 2 and "at least one namespace" in r.output
    r = runner.invoke(app, ["keys", "create", "bot", "-n", "Bad NS", "--db", db])
    assert r.exit_code == 2 and "Traceback" not in r.output
    r = runner.invoke(app, ["keys", "revoke", "nope1234", "--db", db])
    assert r.exit_code == 3 and "Traceback" not in r.output


def test_serve_refuses_a_public_interface_without_keys(tmp_path: Path) -> None:
    db, port = str(tmp_path / "s.db"), str(free_port())
    args = ["serve", "--host", "0.0.0.0", "--port", port, "--db", db, "--embedder", "fake"]
    r = runner.invoke(app, args)
    assert r.exit_code == 5
    assert "refusing to listen on 0.0.0.0 without API keys" in r.output
    assert "memloci keys create" in r.output


@pytest.mark.parametrize("port", ["0", "70000"])
def test_serve_refuses_a_port_out_of_range_before_loading(tmp_path: Path, port: str) -> None:
    r = runner.invoke(app, ["serve", "--demo", "--port", port, "--embedder", "none"])
    assert r.exit_code == 2, r.output
    assert "Invalid value for '--port'" in r.output, r.output
    assert "Loaded the demo" not in r.output and "demo store" not in r.output


def test_serve_demo_runs_the_real_server(tmp_path: Path) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLOCI_")}
    cmd = [
        sys.executable,
        "-m",
        "memloci.interfaces.cli",
        "serve",
        "--demo",
        "--embedder",
        "fake",
        "--port",
        str(port),
        "--no-maintenance",
        "--db",
        str(tmp_path / "d.db"),
    ]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else ""
            assert time.monotonic() < deadline, "server did not start"
            time.sleep(0.2)
        page = httpx.get(f"{base}/memories")
        assert page.status_code == 200 and "text/html" in page.headers["content-type"]
        facts = httpx.get(f"{base}/api/v1/facts/").json()
        assert facts["total"] > 0
        assert httpx.get(f"{base}/api/v1/episodes/").json()["total"] > 10
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=20)
    text = out.decode()
    assert "web UI" in text and f"{base}/memories" in text
    assert proc.returncode in (0, -15)
