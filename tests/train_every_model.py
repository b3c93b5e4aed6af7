"""Train every registered model on the tiny corpora in one Spark application (``python tests/train_every_model.py
MASTER OUT_DIR SEGMENTED_CORPUS ALIGNED_CORPUS ORDERED_CORPUS [EXTRA_JSON]``): the conformance test's run on
another master.
``EXTRA_JSON`` (``{"name": ["--corpus", ..., flags]}``) adds trainings other tests compare with, in the same
application (one JVM start instead of one per test: conftest ``local1_models``)."""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main(master: str, out: str, corpora: dict, extra: dict | None = None) -> None:
    from conftest import train_args
    from drivers import registry
    from jobs.spark import get_spark
    from jobs.train import train
    from tiny_corpora import FAMILY_FLAGS

    spark = get_spark("spark-topics conformance", master, ["spark.default.parallelism=2",
                                                           "spark.sql.shuffle.partitions=4", "spark.ui.enabled=false"])
    for spec in registry.MODELS.values():
        train(spark, train_args(corpora[spec.corpus], os.path.join(out, spec.name), "--model", spec.name,
                                *FAMILY_FLAGS[spec.family]))
    for name, flags in (extra or {}).items():
        train(spark, train_args(flags[1], os.path.join(out, name), *flags[2:]))
    left_to_right_on(spark, out, corpora)
    spark.stop()


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
