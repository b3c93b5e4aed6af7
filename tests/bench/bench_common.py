"""What every benchmark's command line shares: its log format and its local SparkSession."""
from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CORES = 2   # benchmarks compare systems on the same cores: Spark's local[CORES], peers' workers/jobs


def bench_session(app_name: str, driver_memory: str = "4g", conf=()):
    """Logging at INFO with timestamps, then a ``local[CORES]`` SparkSession without the UI."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s",
                        datefmt="%H:%M:%S")
    os.environ.setdefault("SPARK_TOPICS_SPARK_LOG_LEVEL", "ERROR")
    sys.path.insert(0, str(REPO))
    from jobs.spark import get_spark

    return get_spark(app_name, f"local[{CORES}]",
                     [f"spark.driver.memory={driver_memory}", "spark.ui.enabled=false", *conf])
