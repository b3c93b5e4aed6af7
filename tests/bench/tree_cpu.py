"""Run a command; print its wall time and the CPU seconds of its whole process tree (the JVM and Python workers a
Spark job starts included), polled every 0.2 s: ``python tests/bench/tree_cpu.py COMMAND...``. On a busy machine the
CPU seconds say more than the wall clock (README, "A local job's JVM")."""
from __future__ import annotations

import os
import subprocess
import sys
import time

TICKS = os.sysconf("SC_CLK_TCK")


def _children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        kids.setdefault(int(fields[1]), []).append(int(pid))
    return kids


def _cpu_seconds(pid: int) -> float | None:
    try:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / TICKS        # utime + stime


def main(argv: list[str]) -> int:
    began = time.time()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seen: dict[int, float] = {}
    while proc.poll() is None:
        kids, todo = _children(), [proc.pid]
        while todo:
            pid = todo.pop()
            todo += kids.get(pid, [])
            cpu = _cpu_seconds(pid)
            if cpu is not None:
                seen[pid] = max(seen.get(pid, 0.0), cpu)
        time.sleep(0.2)
    print(f"exit {proc.returncode}  wall {time.time() - began:.1f} s  cpu {sum(seen.values()):.1f} s")
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
