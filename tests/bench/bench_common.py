"""What every benchmark shares: the repository on ``sys.path`` (the project and the test helpers), the cache
folder, its log format and its local SparkSession. Import it first."""
from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CACHE = REPO / "out" / "bench"
for _path in (REPO, REPO / "tests", REPO / "sample_data"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))
CORES = 2   # benchmarks compare systems on the same cores: Spark's local[CORES], peers' workers/jobs


def bench_session(app_name: str, driver_memory: str = "4g", conf=()):
    """Logging at INFO with timestamps, then a ``local[CORES]`` SparkSession without the UI."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s",
                        datefmt="%H:%M:%S")
    os.environ.setdefault("SPARK_TOPICS_SPARK_LOG_LEVEL", "ERROR")
    from jobs.spark import get_spark

    return get_spark(app_name, f"local[{CORES}]",
                     [f"spark.driver.memory={driver_memory}", "spark.ui.enabled=false", *conf])
