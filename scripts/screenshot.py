"""Regenerate the README screenshot ``docs/img/web-ui.png`` from the bundled demo.

Starts ``memloci serve --demo`` (a throw-away store, the bundled local model) on a
free loopback port, opens the web UI in headless Chromium (Debian's
``/usr/bin/chromium`` through Playwright; nothing is fetched from elsewhere), opens the
fact that was updated to a second version, and saves the window.

    .venv/bin/python scripts/screenshot.py [--out docs/img/web-ui.png]
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _wait(proc: subprocess.Popen[bytes], url: str) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"memloci serve --demo exited with {proc.returncode}")
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    sys.exit("memloci serve --demo did not answer within 120 s")


def shoot(url: str, out: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    facts = httpx.get(f"{url}/api/v1/facts/", params={"limit": 100}).json()["items"]
    job = next(f for f in facts if f["key"] == "job")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        context = browser.new_context(base_url=url, viewport={"width": 1360, "height": 860})
        context.route(
            "**/*", lambda r: r.continue_() if r.request.url.startswith(url) else r.abort()
        )
        page = context.new_page()
        page.goto(f"/memories#facts/{job['id']}")
        detail = page.get_by_test_id("detail")
        expect(detail.get_by_test_id("version")).to_have_count(2)
        expect(detail.get_by_test_id("provenance")).to_contain_text("Derived from")
        expect(page.get_by_test_id("list")).not_to_have_attribute("aria-busy", "true")
        out.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(out))
        browser.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img" / "web-ui.png")
    out = parser.parse_args().out.resolve()
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLOCI_")}
    cmd = [sys.executable, "-m", "memloci.interfaces.cli", "serve", "--demo", "--port",
           str(port), "--no-maintenance", "--log-level", "warning"]  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="memloci-shot-") as home:
        proc = subprocess.Popen(cmd, env=env, cwd=home)
        try:
            _wait(proc, url)
            shoot(url, out)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
