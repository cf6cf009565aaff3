"""End-to-end ingestion throughput: API call to memories committed, through a real Celery worker.

    .venv/bin/python bench/ingest.py [--messages 2000] [--batch 50] [--users 20]

Runs on its own embedded servers under MEMORYAPP_DATA_DIR (default var/bench-ingest), emptied of
earlier runs' organizations first. The web side is Django's request handler in this process (POST
/api/v1/episodes, without `wait`: the episodes are embedded in one batch and stored, 202 and a
job); one worker process (`celery worker --pool solo`) extracts with the rules engine, embedding the
candidates in one batch per job. Each process embeds on one thread (EMBEDDING_THREADS). Prints
messages per second from the first API call to the last job done, the API's own share, the
worker's peak memory (RSS), and the memories committed. The timed run starts once a one-message
job has gone through: the figures are a warm worker's, and that first job's time is printed apart.
"""

# ruff: noqa: E402  (Django is configured before the project is imported)
from __future__ import annotations

import argparse
import json
import os
import random
import secrets
import subprocess
import sys
import threading
import time

os.environ["MEMORY_EXTRACTOR"] = "rules"
# As deployed (docker-compose, make run): with DEBUG on, Django logs every query with its SQL, in both processes.
os.environ.setdefault("DEBUG", "false")
os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(50))  # DEBUG off requires one; nothing is kept signed

from setup_django import setup_django

ROOT = setup_django("bench-ingest")

import psutil
from django.conf import settings
from django.core.management import call_command
from django.test import Client

from memoryapp.celery import app
from memoryapp.models import Job, Memory, Organization
from memoryapp.services.tenancy import agent_create

FACTS = [
    "I live in {city}.", "I moved to {city} last month.", "I work at {company}.", "I'm a {job}.",
    "I'm vegetarian.", "I eat fish now.", "I have a dog named {pet}.", "I love {hobby}.", "I hate {food}.",
    "My sister lives in {city}.", "I'm planning to visit {city} next month.", "Please always answer in {lang}.",
]
SMALL_TALK = ["haha ok", "thanks!", "how are you today?", "that sounds great", "lol", "nice weather today",
              "what do you think?", "sure, go ahead", "good morning", "I see"]
FILL = {
    "city": ["Porto", "Lisbon", "Berlin", "Osaka", "Lima", "Oslo"], "company": ["Initech", "Globex", "Umbrella"],
    "job": ["nurse", "teacher", "plumber", "designer"], "pet": ["Rex", "Luna", "Milo"],
    "hobby": ["hiking", "chess", "jazz", "gardening"], "food": ["olives", "cilantro", "mushrooms"],
    "lang": ["French", "German", "Spanish"],
}


def message(rng: random.Random) -> str:
    if rng.random() < 0.5:
        return rng.choice(SMALL_TALK)
    template = rng.choice(FACTS)
    return template.format(**{key: rng.choice(values) for key, values in FILL.items()})


def start_worker(env: dict) -> subprocess.Popen:
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "memoryapp", "worker", "--pool", "solo", "--loglevel", "WARNING",
         "--hostname", f"bench-{os.getpid()}@%h", "--without-gossip", "--without-mingle"],
        cwd=ROOT, env=env,
    )
    deadline = time.monotonic() + 90
    while not app.control.ping(timeout=0.5):
        if worker.poll() is not None or time.monotonic() > deadline:
            sys.exit("the worker did not start")
    return worker


def watch_memory(pid: int, peak: list[int], stop: threading.Event) -> None:
    process = psutil.Process(pid)
    while not stop.is_set():
        try:
            rss = process.memory_info().rss + sum(c.memory_info().rss for c in process.children(recursive=True))
        except psutil.Error:
            return
        peak[0] = max(peak[0], rss)
        time.sleep(0.1)


def wait_for(jobs: list[str]) -> None:
    while Job.objects.filter(pk__in=jobs).exclude(status__in=["succeeded", "failed"]).exists():
        time.sleep(0.05)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=50, help="messages per API call")
    parser.add_argument("--users", type=int, default=20)
    args = parser.parse_args()

    call_command("migrate", verbosity=0)
    # Every run starts from the same, empty store: earlier runs' rows would make later ones pay larger indexes.
    Organization.objects.filter(name__startswith="bench-ingest-").delete()
    organization = Organization.objects.create(name=f"bench-ingest-{int(time.time())}")
    _, key = agent_create(organization=organization, name="bench", permissions=["read", "write"])
    env = {**os.environ, "DATABASE_URL": settings.DATABASE_URL, "REDIS_URL": settings.REDIS_URL}
    app.control.purge()
    worker = start_worker(env)
    peak, stop = [0], threading.Event()
    threading.Thread(target=watch_memory, args=(worker.pid, peak, stop), daemon=True).start()

    rng = random.Random(42)
    client = Client(HTTP_AUTHORIZATION=f"Bearer {key}")
    client.post("/api/v1/search", {"user": "warmup", "query": "x"}, content_type="application/json")  # load model
    # The worker loads its model as it starts (memoryapp.celery); the figures are a warm worker's.
    started = time.perf_counter()
    warmup = {"user": "warmup", "messages": [{"role": "user", "content": "I live in Porto."}]}
    wait_for([client.post("/api/v1/episodes", json.dumps(warmup), content_type="application/json").json()["job"]])
    first_job = time.perf_counter() - started
    jobs, api_seconds = [], 0.0
    started = time.perf_counter()
    for sent in range(0, args.messages, args.batch):
        body = {"user": f"user-{rng.randrange(args.users)}", "session": f"s{sent // 500}",
                "messages": [{"role": "user", "content": message(rng)}
                             for _ in range(min(args.batch, args.messages - sent))]}
        call = time.perf_counter()
        response = client.post("/api/v1/episodes", json.dumps(body), content_type="application/json")
        api_seconds += time.perf_counter() - call
        assert response.status_code == 202, response.content
        jobs.append(response.json()["job"])
    wait_for(jobs)
    elapsed = time.perf_counter() - started
    stop.set()
    worker.terminate()
    worker.wait(30)

    failed = Job.objects.filter(pk__in=jobs, status="failed").count()
    memories = Memory.objects.filter(organization=organization).count()
    print(f"messages            {args.messages} in {len(jobs)} API calls of {args.batch}, {args.users} users")
    print(f"end to end          {elapsed:.1f} s  ->  {args.messages / elapsed:.0f} messages/s (one worker process)")
    print(f"API share           {api_seconds:.1f} s (gate, embed the episodes, insert, commit, enqueue)")
    print(f"worker share        {elapsed - api_seconds:.1f} s after the last API call returned (extract, embed the"
          " candidates, judge, apply), the rest overlapping the API calls")
    print(f"memories committed  {memories}   failed jobs {failed}")
    print(f"worker peak memory  {peak[0] / 2**20:.0f} MiB RSS")
    print(f"first job           {first_job:.1f} s after the worker answered (one message; before the timed run)")
    print(f"throughput={args.messages / elapsed:.0f} msg/s")


if __name__ == "__main__":
    main()
