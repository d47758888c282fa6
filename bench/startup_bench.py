"""Start-up time of memloci as whole processes, against ``python -c pass`` in the same run.

Each round runs every command once, in turn (interleaved, so load from other jobs on a
shared machine hits them alike); the table shows the median and the best wall time,
and the median over the floor (``python -c pass``) beside the target from the issue
"First run": ``import memloci`` ≤ 0.3 s, ``memloci --help`` ≤ 0.5 s and a one-shot
``memloci memory search`` on a populated store ≤ 1.0 s over the floor; ``memloci memory
--help`` ≤ 0.5 s (a group's help loads no SDK) and the MCP stdio connect time — spawn
``memloci mcp`` and complete ``initialize`` + ``tools/list`` with the official ``mcp``
client — aimed at ≤ 1.5 s. The store is the bundled demo (``memloci demo --db``) in a
temp folder, searched with the default embedder (int8 ONNX MiniLM).

Bytecode: the commands run with their compiled bytecode cached in a temporary
``PYTHONPYCACHEPREFIX`` (written by the warm-up round), as an installed package runs;
an environment with ``PYTHONDONTWRITEBYTECODE=1`` would otherwise compile every module
of memloci in every run (~0.25 s here). ``--no-bytecode`` measures that way instead.
The last column is each process's CPU time (user + system): other jobs on shared cores
hardly change it, so compare it when the load average is high (a process that waits on
a second thread — the model loading beside the imports — uses more CPU than wall time).
``--importtime`` prints the slowest imports of a command.

    python bench/startup_bench.py [--rounds 9] [--no-bytecode] [--importtime "import memloci"]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PY = sys.executable
CLI = [PY, "-m", "memloci.interfaces.cli"]


MCP = "memloci mcp: initialize + tools/list (stdio)"


def commands(db: str) -> list[tuple[str, list[str], float | None]]:
    return [
        ("python -c pass (floor)", [PY, "-c", "pass"], None),
        ("import memloci", [PY, "-c", "import memloci"], 0.3),
        ("from memloci import Memory", [PY, "-c", "from memloci import Memory"], None),
        ("memloci --help", [*CLI, "--help"], 0.5),
        ("memloci memory --help", [*CLI, "memory", "--help"], 0.5),
        ("memloci memory search (one shot)",
         [*CLI, "memory", "search", "where does Sam live", "--user", "sam", "--db", db], 1.0),
        (MCP, [*CLI, "mcp", "--db", db, "--user", "sam"], 1.5),
    ]  # fmt: skip


def mcp_connect(argv: list[str], env: dict[str, str]) -> float:
    """Seconds from spawning ``argv`` (an MCP stdio server) until the official client has
    completed ``initialize`` and received ``tools/list``; then it disconnects."""
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=argv[0], args=argv[1:], env=env)

    async def connect() -> float:
        with open(os.devnull, "w") as errlog:
            start = time.perf_counter()
            async with Client(stdio_client(params, errlog=errlog)) as client:
                tools = (await client.list_tools()).tools
                elapsed = time.perf_counter() - start
        if not tools:
            raise SystemExit(f"{' '.join(argv)} listed no tools")
        return elapsed

    return asyncio.run(connect())


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_once(argv: list[str], env: dict[str, str], name: str = "") -> tuple[float, float]:
    """(wall seconds, CPU seconds of the whole child process). CPU time hardly depends on
    other jobs sharing the cores; for the MCP server it includes its shutdown."""
    cpu = _children_cpu()
    if name == MCP:
        return mcp_connect(argv, env), _children_cpu() - cpu
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stderr}")
    return elapsed, _children_cpu() - cpu


def importtime(code: str, top: int = 25) -> None:
    out = subprocess.run([PY, "-X", "importtime", "-c", code], capture_output=True, text=True)
    rows = []
    for line in out.stderr.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            rows.append((int(parts[1]), parts[2].rstrip()))
    print(f"slowest imports (cumulative µs) of: python -c {code!r}")
    for micros, name in sorted(rows, reverse=True)[:top]:
        print(f"{micros:>9} {name}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--importtime", metavar="CODE", help="show the slowest imports of CODE")
    ap.add_argument(
        "--no-bytecode", action="store_true", help="keep PYTHONDONTWRITEBYTECODE as it is set"
    )
    args = ap.parse_args()
    if args.importtime:
        importtime(args.importtime)
        return
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLOCI_")}
    with tempfile.TemporaryDirectory(prefix="memloci-startup-") as tmp:
        if not args.no_bytecode:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "pycache")
        db = str(Path(tmp) / "demo.db")
        subprocess.run([*CLI, "demo", "--db", db], env=env, capture_output=True, check=True)
        cmds = commands(db)
        times: dict[str, list[float]] = {name: [] for name, _, _ in cmds}
        cpu: dict[str, list[float]] = {name: [] for name, _, _ in cmds}
        for name, argv, _ in cmds:  # warm the OS file cache (and the bytecode) once
            run_once(argv, env, name)
        for _ in range(args.rounds):
            for name, argv, _ in cmds:
                wall, used = run_once(argv, env, name)
                times[name].append(wall)
                cpu[name].append(used)
    floor = statistics.median(times[cmds[0][0]])
    bytecode = "without cached bytecode" if args.no_bytecode else "bytecode cached"
    print(f"start-up, {args.rounds} interleaved rounds, {os.cpu_count()} cores, "
          f"Python {sys.version.split()[0]}, {bytecode}, "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")  # fmt: skip
    print()
    print("| command | median s | best s | median over floor s | target over floor | ok "
          "| median CPU s |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for name, _, target in cmds:
        med, best = statistics.median(times[name]), min(times[name])
        over = med - floor
        ok = "" if target is None else ("yes" if over <= target else "NO")
        tgt = "" if target is None else f"≤ {target:.1f}"
        used = statistics.median(cpu[name])
        print(f"| {name} | {med:.3f} | {best:.3f} | {over:+.3f} | {tgt} | {ok} | {used:.3f} |")


if __name__ == "__main__":
    main()
