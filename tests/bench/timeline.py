"""pytest plugin: when each test ran and on which pytest-xdist worker, to see how the suite's wall time is spent
(README "Tests": idle workers at the end of a run, the longest groups).

    PYTHONPATH=tests/bench TIMELINE_OUT=/tmp/timeline.jsonl deploy/run-tests.sh -p timeline
    python tests/bench/timeline.py /tmp/timeline.jsonl        # per worker: busy, idle tail, longest modules

One JSON line per test in ``TIMELINE_OUT`` (default /tmp/timeline.jsonl): ``worker``, ``id``, ``start``, ``end``
(seconds since the epoch; setup, call and teardown together).
"""
from __future__ import annotations

import collections
import json
import os
import sys
import time

import pytest

OUT = os.environ.get("TIMELINE_OUT", "/tmp/timeline.jsonl")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    start = time.time()
    yield
    with open(OUT, "a") as f:
        f.write(json.dumps({"worker": os.environ.get("PYTEST_XDIST_WORKER", "main"), "id": item.nodeid,
                            "start": round(start, 3), "end": round(time.time(), 3)}) + "\n")


def summary(path: str) -> str:
    rows = [json.loads(line) for line in open(path)]
    begin, finish = min(r["start"] for r in rows), max(r["end"] for r in rows)
    lines = [f"{len(rows)} tests, {finish - begin:.0f} s from the first test's start to the last one's end"]
    for worker in sorted({r["worker"] for r in rows}):
        mine = [r for r in rows if r["worker"] == worker]
        busy = sum(r["end"] - r["start"] for r in mine)
        first, last = min(r["start"] for r in mine) - begin, max(r["end"] for r in mine) - begin
        lines.append(f"{worker}: {len(mine)} tests, busy {busy:.0f} s, first start +{first:.0f} s, done at +{last:.0f} s")
    modules = collections.Counter()
    for r in rows:
        modules[r["id"].split("::")[0]] += r["end"] - r["start"]
    lines.append("longest modules (wall seconds):")
    lines += [f"  {seconds:6.0f}  {module}" for module, seconds in modules.most_common(15)]
    return "\n".join(lines)


if __name__ == "__main__":
    print(summary(sys.argv[1] if len(sys.argv) > 1 else OUT))
