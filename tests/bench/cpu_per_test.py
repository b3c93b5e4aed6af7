"""pytest plugin: the CPU seconds of the whole process tree (JVMs, Spark workers, subprocess jobs) per test phase,
read from a cpuacct cgroup that holds the run, so the figures compare also on a loaded machine (README "Tests").

    mkdir -p /sys/fs/cgroup/cpuacct/suite                      # cgroup v1, as root
    sh -c 'echo $$ > /sys/fs/cgroup/cpuacct/suite/cgroup.procs; \
           SPARK_TOPICS_FULL_RUN=1 PYTHONPATH=tests/bench exec .venv/bin/python -m pytest -p cpu_per_test'

One JSON line per phase in ``CPU_OUT`` (default /tmp/cpu_per_test.jsonl): ``id``, ``phase``, ``cpu``, ``wall``.
"""
import json
import os
import time

import pytest

CGROUP = os.environ.get("CPU_CGROUP", "/sys/fs/cgroup/cpuacct/suite")
OUT = os.environ.get("CPU_OUT", "/tmp/cpu_per_test.jsonl")


def _usage() -> float:
    with open(os.path.join(CGROUP, "cpuacct.usage")) as f:
        return int(f.read()) / 1e9


def _measured(phase):
    @pytest.hookimpl(hookwrapper=True)
    def hook(item):
        cpu, wall = _usage(), time.time()
        yield
        with open(OUT, "a") as f:
            f.write(json.dumps({"id": item.nodeid, "phase": phase, "cpu": round(_usage() - cpu, 3),
                                "wall": round(time.time() - wall, 3)}) + "\n")
    return hook


pytest_runtest_setup = _measured("setup")
pytest_runtest_call = _measured("call")
pytest_runtest_teardown = _measured("teardown")
