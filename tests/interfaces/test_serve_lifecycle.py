"""``memloci serve`` lifecycle, as real subprocesses: a busy port fails before anything
loads, the throw-away ``--demo`` store is removed on exit, exit codes as documented, an
open server answering any Host is refused."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from rest_server import free_port

from memloci.errors import ConflictError, PermissionDeniedError, ValidationError
from memloci.interfaces.cli_server import guard_public


def _env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLOCI_")}
    env["TMPDIR"] = str(tmp)  # where --demo makes its throw-away store
    return env


def _serve(tmp: Path, *args: str) -> subprocess.Popen[str]:
    cmd = [sys.executable, "-m", "memloci.interfaces.cli", "serve", "--embedder", "fake",
           "--no-maintenance", *args]  # fmt: skip
    return subprocess.Popen(
        cmd, env=_env(tmp), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def _wait_until_up(proc: subprocess.Popen[str], base: str) -> None:
    deadline = time.monotonic() + 90
    while True:
        try:
            if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
        assert time.monotonic() < deadline, "server did not start"
        time.sleep(0.2)


def test_a_busy_port_fails_before_the_demo_loads(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        proc = _serve(tmp_path, "--demo", "--port", str(port))
        out, _ = proc.communicate(timeout=120)
    assert proc.returncode == ConflictError.exit_code, out
    assert f"port {port} is already in use" in out and "--port" in out
    assert "demo" not in out.lower() and "Traceback" not in out
    assert list(tmp_path.iterdir()) == []  # no throw-away store was even created


def test_a_host_that_is_not_this_machine_is_a_clear_error(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    proc = _serve(tmp_path, "--host", "192.0.2.1", "--port", str(free_port()), "--db", str(db))
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == ValidationError.exit_code, out
    assert "cannot listen on 192.0.2.1" in out and "Traceback" not in out
    assert not db.exists()


def test_answering_any_host_without_keys_is_refused(tmp_path: Path) -> None:
    """``--allowed-host '*'`` turns the DNS-rebinding check off: as open to any web page
    as listening on a public address, so refused the same way (same exit code)."""
    db = tmp_path / "nokey.db"
    proc = _serve(tmp_path, "--port", str(free_port()), "--db", str(db), "--allowed-host", "*")
    try:
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:  # it served: stop it before failing
            proc.kill()
            proc.communicate()
    assert proc.returncode == PermissionDeniedError.exit_code, out
    assert "refusing to answer any Host" in out and "memloci keys create" in out
    assert "Traceback" not in out and "serving" not in out
    with pytest.raises(PermissionDeniedError, match="any Host"):
        guard_public("127.0.0.1", has_keys=False, allowed_hosts=["mem.lan", " * "])
    guard_public("127.0.0.1", has_keys=True, allowed_hosts=["*"])
    guard_public("127.0.0.1", has_keys=False, allowed_hosts=["mem.example.org"])


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_the_throw_away_demo_store_is_removed_on_exit(tmp_path: Path, sig: int) -> None:
    port = free_port()
    proc = _serve(tmp_path, "--demo", "--port", str(port))
    try:
        _wait_until_up(proc, f"http://127.0.0.1:{port}")
        scratch = [p for p in tmp_path.iterdir() if p.name.startswith("memloci-serve-")]
        assert len(scratch) == 1 and (scratch[0] / "demo.db").exists()
        facts = httpx.get(f"http://127.0.0.1:{port}/api/v1/facts/").json()
        assert facts["total"] > 0
    finally:
        proc.send_signal(sig)
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out
    assert f"Removed the throw-away demo store {scratch[0]}" in out
    assert not scratch[0].exists()
    assert "Traceback" not in out


def test_a_given_db_is_kept(tmp_path: Path) -> None:
    port = free_port()
    db = tmp_path / "keep.db"
    proc = _serve(tmp_path, "--demo", "--db", str(db), "--port", str(port))
    try:
        _wait_until_up(proc, f"http://127.0.0.1:{port}")
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out
    assert db.exists() and "Removed" not in out
