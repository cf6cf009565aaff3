"""Mixed API load on loopback: searches, context blocks and ingests against a running stack.

    .venv/bin/python bench/load.py [--seconds 30] [--concurrency 8] [--users 50]
    .venv/bin/python bench/load.py --url http://127.0.0.1:8000 --key mk_...   # an already running `make run`

Without --url it starts its own stack (`manage.py runstack`) under MEMORYAPP_DATA_DIR (default
var/bench-load) on a free port, seeds some memories, runs the load, and stops everything.
Requests stay on 127.0.0.1; the loop is bounded in time and in concurrency.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MIX = [("search", 0.6), ("context", 0.2), ("ingest", 0.2)]
QUERIES = ["where does the user live", "what does the user eat", "who is the user's sister", "favourite hobby",
           "what pets does the user have", "where does the user work", "any plans for next month"]
FACTS = ["I live in {c}.", "I love {h}.", "I work at {w}.", "I have a dog named {p}.", "I'm vegetarian.",
         "My sister lives in {c}.", "thanks, that helps!", "how's it going?"]
WORDS = {"c": ["Porto", "Lisbon", "Oslo", "Lima"], "h": ["chess", "jazz", "hiking"], "w": ["Initech", "Globex"],
         "p": ["Rex", "Luna"]}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_stack(data_dir: Path) -> tuple[subprocess.Popen, str, str]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}}
    env.update(MEMORYAPP_DATA_DIR=str(data_dir), PORT=str(port), WEB_CONCURRENCY="2")
    log = open(data_dir.parent / "bench-load-stack.log", "w")  # noqa: SIM115  (kept open for the child)
    stack = subprocess.Popen([sys.executable, "manage.py", "runstack"], cwd=ROOT, env=env, stdout=log,
                             stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while True:
        try:
            with urllib.request.urlopen(f"{url}/healthz", timeout=5) as response:
                if response.status == 200:
                    break
        except (urllib.error.URLError, OSError):
            pass
        if stack.poll() is not None or time.monotonic() > deadline:
            sys.exit(f"the stack did not start; see {log.name}")
        time.sleep(1)
    key = subprocess.run(
        [sys.executable, "manage.py", "create_agent_key", "--org", f"load-{int(time.time())}", "--name", "load",
         "--permissions", "read,write"],
        cwd=ROOT, env=env, capture_output=True, text=True, check=True,
    ).stdout.strip()
    return stack, url, key


def call(url: str, key: str, path: str, body: dict) -> int:
    request = urllib.request.Request(f"{url}/api/v1/{path}", data=json.dumps(body).encode(), method="POST",
                                     headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            response.read()
            return response.status
    except urllib.error.HTTPError as error:
        return error.code
    except OSError:
        return 0


def fact(rng: random.Random) -> str:
    return rng.choice(FACTS).format(**{k: rng.choice(v) for k, v in WORDS.items()})


def request_for(kind: str, rng: random.Random, users: int) -> tuple[str, dict]:
    user = f"user-{rng.randrange(users)}"
    if kind == "ingest":
        return "episodes", {"user": user, "messages": [{"role": "user", "content": fact(rng)} for _ in range(5)]}
    body = {"user": user, "query": rng.choice(QUERIES)}
    if kind == "context":
        body["budget_tokens"] = 400
    return ("search" if kind == "search" else "context"), body


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--url")
    parser.add_argument("--key")
    args = parser.parse_args()
    if args.url and not re.match(r"https?://(127\.\d+\.\d+\.\d+|localhost|\[::1\])(:\d+)?$", args.url):
        sys.exit("--url must be a loopback address")

    stack = None
    if args.url:
        url, key = args.url, args.key or sys.exit("--key is needed with --url")
    else:
        data_dir = Path(os.environ.get("MEMORYAPP_DATA_DIR", ROOT / "var" / "bench-load")).resolve()
        data_dir.mkdir(parents=True, exist_ok=True)
        stack, url, key = start_stack(data_dir)
    try:
        seed = random.Random(1)
        for user in range(args.users):  # every user has something to find
            call(url, key, "episodes", {"user": f"user-{user}", "wait": True,
                                        "messages": [{"role": "user", "content": fact(seed)} for _ in range(4)]})
        latencies: dict[str, list[float]] = defaultdict(list)
        statuses: dict[str, list[int]] = defaultdict(list)
        lock = threading.Lock()
        stop_at = time.monotonic() + args.seconds

        def worker(n: int) -> None:
            rng = random.Random(100 + n)
            while time.monotonic() < stop_at:
                kind = rng.choices([k for k, _ in MIX], weights=[w for _, w in MIX])[0]
                path, body = request_for(kind, rng, args.users)
                started = time.perf_counter()
                status = call(url, key, path, body)
                with lock:
                    latencies[kind].append((time.perf_counter() - started) * 1000)
                    statuses[kind].append(status)

        threads = [threading.Thread(target=worker, args=(n,)) for n in range(args.concurrency)]
        began = time.monotonic()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.monotonic() - began
    finally:
        if stack is not None:
            stack.send_signal(signal.SIGTERM)
            stack.wait(60)

    def pct(values: list[float], q: float) -> float:
        return statistics.quantiles(values, n=100)[int(q) - 1] if len(values) >= 2 else (values or [0])[0]

    print(f"{args.concurrency} clients for {elapsed:.0f} s against {url} ({args.users} users)")
    print(f"{'kind':8} {'requests':>8} {'req/s':>7} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'errors':>7}")
    everything, failures = [], 0
    for kind, _ in MIX:
        values, codes = latencies[kind], statuses[kind]
        errors = sum(1 for code in codes if code >= 500 or code == 0 or code == 429)
        failures += errors
        everything += values
        if values:
            rate = len(values) / elapsed
            print(f"{kind:8} {len(values):8d} {rate:7.1f} {pct(values, 50):8.0f} {pct(values, 95):8.0f} "
                  f"{pct(values, 99):8.0f} {errors / len(values):7.1%}")
    total = len(everything)
    print(f"{'all':8} {total:8d} {total / elapsed:7.1f} {pct(everything, 50):8.0f} {pct(everything, 95):8.0f} "
          f"{pct(everything, 99):8.0f} {failures / max(total, 1):7.1%}")
    print(f"throughput={total / elapsed:.1f} req/s error_rate={failures / max(total, 1):.2%}")


if __name__ == "__main__":
    main()
