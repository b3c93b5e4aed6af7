"""Train every registered model on the tiny corpora in one Spark application (``python tests/train_every_model.py
MASTER OUT_DIR SEGMENTED_CORPUS ALIGNED_CORPUS ORDERED_CORPUS [EXTRA_JSON]``): the conformance test's run on
another master.
``EXTRA_JSON`` (``{"name": ["--corpus", ..., flags]}``) adds trainings other tests compare with, in the same
application (one JVM start instead of one per test: conftest ``local1_models``)."""
from __future__ import annotations

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main(master: str, out: str, corpora: dict, extra: dict | None = None) -> None:
    from conftest import train_args
    from drivers import registry
    from jobs.spark import get_spark
    from jobs.train import train
    from tiny_corpora import FAMILY_FLAGS

    step = Steps(out)
    spark = get_spark("spark-topics conformance", master, ["spark.default.parallelism=2",
                                                           "spark.sql.shuffle.partitions=4", "spark.ui.enabled=false"])
    step("spark")
    for spec in registry.MODELS.values():
        train(spark, train_args(corpora[spec.corpus], os.path.join(out, spec.name), "--model", spec.name,
                                *FAMILY_FLAGS[spec.family]))
        step(spec.name)
    for name, flags in (extra or {}).items():
        train(spark, train_args(flags[1], os.path.join(out, name), *flags[2:]))
        step(name)
    left_to_right_on(spark, out, corpora)
    step("left_to_right")
    spark.stop()


#: ``OUT/steps.txt``: one line per finished step (the JVM's start, a training, the left-to-right figures) with its
#: seconds, which :func:`run_watched` watches
STEPS = "steps.txt"
#: the seconds one step may take before the application is taken for hung: a step takes 5-60 s alone (the first
#: training compiles kernels), several times that on a host the other test workers and jobs load
STALL = 600


class Steps:
    """Appends a finished step to ``OUT/steps.txt`` (name, seconds since the previous one)."""

    def __init__(self, out: str):
        self.path, self.last = os.path.join(out, STEPS), time.monotonic()

    def __call__(self, name: str) -> None:
        now = time.monotonic()
        with open(self.path, "a") as f:
            f.write(f"{name} {now - self.last:.1f}\n")
        self.last = now


def run_watched(argv: list, out: str, env: dict, stall: float = STALL) -> None:
    """Run this script (``argv`` its arguments) and wait while it makes progress: the application is killed and the
    caller fails when no step finished in ``stall`` seconds (a hung step, named), not after a fixed time for the
    whole run (which the trainings outgrow as they are added, and a loaded host outlasts). The steps' seconds stay
    in ``OUT/steps.txt``, the application's output in ``OUT/log.txt``."""
    import signal
    import subprocess

    steps, log = os.path.join(out, STEPS), os.path.join(out, "log.txt")
    with open(log, "w") as f:          # (its own process group: a hung application is killed with its JVM)
        proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), *argv], stdout=f,
                                stderr=subprocess.STDOUT, env=env, start_new_session=True)
    done, since = [], time.monotonic()
    try:
        while proc.poll() is None:
            time.sleep(1.0)
            now = _read(steps).splitlines()
            if len(now) != len(done):
                done, since = now, time.monotonic()
            elif time.monotonic() - since > stall:
                after = done[-1].split()[0] if done else "nothing (the JVM's start)"
                raise AssertionError(f"local[1] application hung: no step finished in {stall:.0f} s after "
                                     f"{after}; steps {done}\n{_read(log)[-3000:]}")
    finally:
        if proc.poll() is None:         # (hung, or the test run interrupted)
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 0, _read(log)[-6000:]


def _read(path: str) -> str:
    try:
        with open(path) as f:
            return f.read()
    except FileNotFoundError:
        return ""


#: the models whose left-to-right figures the conformance test compares with local[2] (the default kernel's two
#: callers and the network particles)
LEFT_TO_RIGHT_MODELS = ("lda-gibbs", "lda", "pdp-network")
LEFT_TO_RIGHT_SETTINGS = {"particles": 3, "resample": True, "seed": 2}


def left_to_right_on(spark, out: str, corpora: dict) -> None:
    """``OUT/left_to_right.json``: ``{model: [loglik, loglik_importance]}`` by ``evaluate --method left-to-right``."""
    import json

    from drivers import registry
    from inference.left_to_right import LeftToRight
    from jobs.evaluate import evaluate_model

    figures = {}
    for name in LEFT_TO_RIGHT_MODELS:
        r = evaluate_model(spark, os.path.join(out, name), corpora[registry.model(name).corpus],
                           left_to_right=LeftToRight(**LEFT_TO_RIGHT_SETTINGS))["left_to_right"]
        figures[name] = [r["loglik"], r["loglik_importance"]]
    with open(os.path.join(out, "left_to_right.json"), "w") as f:
        json.dump(figures, f)


if __name__ == "__main__":
    from drivers import registry

    import json

    master, out, segmented, aligned, ordered = sys.argv[1:6]
    main(master, out, {registry.BAG_OF_WORDS: segmented, registry.SEGMENTED: segmented, registry.ALIGNED: aligned,
                       registry.ORDERED: ordered},
         json.loads(sys.argv[6]) if len(sys.argv) > 6 else None)
