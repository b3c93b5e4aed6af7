"""CPU seconds of a small local Spark application (start, a Parquet write and read, a Python RDD job, stop), all its
processes counted through a cpuacct cgroup (cgroup v1, as root): the JVM class archive's effect (README "C1 only").

    python tests/bench/jvm_start_cpu.py            # with the archive deploy/setup.sh recorded
    SPARK_TOPICS_JVM_ARCHIVE=off python tests/bench/jvm_start_cpu.py
"""
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
CGROUP = "/sys/fs/cgroup/cpuacct/jvm_start_cpu"


def cpu() -> float:
    with open(os.path.join(CGROUP, "cpuacct.usage")) as f:
        return int(f.read()) / 1e9


def main() -> None:
    os.makedirs(CGROUP, exist_ok=True)
    with open(os.path.join(CGROUP, "cgroup.procs"), "w") as f:
        f.write(str(os.getpid()))
    start = cpu()
    from jobs.spark import get_spark

    spark = get_spark("jvm-start-cpu", "local[2]", ["spark.default.parallelism=2", "spark.sql.shuffle.partitions=4",
                                                    "spark.ui.enabled=false"])
    with tempfile.TemporaryDirectory() as folder:
        spark.range(10).count()
        spark.createDataFrame([(1, "a")], "x int, y string").write.parquet(os.path.join(folder, "t.parquet"))
        spark.read.parquet(os.path.join(folder, "t.parquet")).collect()
        spark.sparkContext.parallelize(range(10), 2).map(lambda x: x * 2).sum()
    spark.stop()
    print(f"{cpu() - start:.1f} CPU s (archive: {os.environ.get('SPARK_TOPICS_JVM_ARCHIVE', 'on')})")


if __name__ == "__main__":
    main()
