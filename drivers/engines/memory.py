"""Spark memory sized from the model: a run that cannot fit is refused before the first iteration.

The Gibbs engine's driver moves the dense K x V count table through the JVM every iteration, and ``infer`` and
``evaluate`` broadcast a model's K x V weights once, so their driver heap (``spark.driver.memory``) grows with
K x V; the variational engine's does not (its topic parameters travel in the reducers' files,
:mod:`drivers.engines.variational.topic_store`). :func:`driver_memory_conf` chooses the setting for a local run
(unless the user set
it) and refuses, in one line saying what to set, a run whose setting is too small or that this machine cannot
hold. The tasks' Python memory is checked by :func:`python_memory_check`.
"""
from __future__ import annotations

import os

from inference.errors import RefusedError

MB = 1 << 20
#: the driver JVM's own needs besides the model (Spark's structures, the corpus metadata, task results)
BASE_BYTES = 768 * MB
#: Spark's default spark.driver.memory
DEFAULT_BYTES = 1024 * MB


def parse_size(text: str) -> int:
    """A JVM memory size (``512m``, ``4g``, ``1.5g``, bytes) in bytes."""
    text = str(text).strip().lower().rstrip("b")
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(float(text))


def format_size(size: int) -> str:
    """Bytes as a spark.driver.memory value, rounded up to whole megabytes."""
    mb = -(-size // MB)
    return f"{mb // 1024}g" if mb % 1024 == 0 else f"{mb}m"


def physical_memory() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def driver_memory_conf(needed: int, given: str | None, can_set: bool, machine: int | None = None) -> str | None:
    """The ``spark.driver.memory`` to set for a run needing ``needed`` bytes of driver heap: None when ``given``
    (the user's or the running session's setting) suffices or nothing may be set; a size when the job may choose
    (``can_set``: a local run that creates its Spark session); otherwise a one-line refusal (RefusedError)."""
    machine = physical_memory() if machine is None else machine
    if machine is not None and needed > 0.75 * machine:
        raise RefusedError(f"the model needs about {format_size(needed)} of driver memory, more than this machine can "
                           f"give ({format_size(machine)} in all): use fewer topics, a smaller vocabulary "
                           f"(prepare --max-vocab), or a cluster whose driver has spark.driver.memory >= "
                           f"{format_size(needed)}")
    if given is not None:
        if parse_size(given) >= needed:
            return None
        raise RefusedError(f"spark.driver.memory={given} is too small for this model (about {format_size(needed)} "
                           f"needed): set --conf spark.driver.memory={format_size(needed)} (spark-submit: "
                           f"--driver-memory {format_size(needed)}), or use fewer topics or a smaller vocabulary")
    if not can_set:
        if needed <= DEFAULT_BYTES:
            return None
        raise RefusedError(f"the model needs about {format_size(needed)} of driver memory, more than Spark's default "
                           f"1g: pass --driver-memory {format_size(needed)} to spark-submit")
    return format_size(max(needed, DEFAULT_BYTES))


#: a Python worker's own needs (interpreter, numpy, numba, pyarrow, a block of documents)
PYTHON_BASE_BYTES = 384 * MB


def variational_task_bytes(num_topics: int, vocab_size: int, local_vocab: int, reducers: int) -> int:
    """Python memory of one task of the variational engine: a mapper holds its partition's word weights and
    statistics (U x K, U = ``local_vocab``) with the records being shipped; a reducer the running lambda rows of
    its topics, their weights and the sorted records (K/R x V). Four float64 copies of the larger of the two
    (measured on the benchmark corpus, README)."""
    per_reducer = -(-num_topics // max(reducers, 1))
    return PYTHON_BASE_BYTES + 4 * 8 * max(local_vocab * num_topics, per_reducer * vocab_size)


def python_memory_check(task_bytes: int, master: str, conf: dict, cores: int, machine: int | None = None) -> str:
    """Refuse, before the first iteration, a run whose Python tasks cannot fit; returns the line to log.

    Local mode: ``cores`` tasks at once must fit in three quarters of this machine. A cluster: when
    ``spark.executor.pyspark.memory`` is set (the Python memory of an executor), an executor's concurrent tasks
    (``spark.executor.cores``, default 1) must fit in it."""
    need = format_size(task_bytes)
    if master.startswith("local"):
        machine = physical_memory() if machine is None else machine
        if machine is not None and cores * task_bytes > 0.75 * machine:
            raise RefusedError(f"each training task needs about {need} of Python memory, {cores} at once more than "
                               f"this machine has ({format_size(machine)}): use more partitions (train "
                               f"--partitions, so each partition has fewer distinct words), more reducers "
                               f"(--reducers), or fewer topics")
        return f"Python memory: about {need} per task, {cores} tasks at once"
    executor_cores = int(conf.get("spark.executor.cores", 1) or 1)
    given = conf.get("spark.executor.pyspark.memory")
    if given is not None and parse_size(given) < executor_cores * task_bytes:
        raise RefusedError(f"spark.executor.pyspark.memory={given} is too small: each training task needs about "
                           f"{need} of Python memory and an executor runs {executor_cores} at once: set "
                           f"--conf spark.executor.pyspark.memory={format_size(executor_cores * task_bytes)}, or "
                           f"use more partitions (--partitions) or reducers (--reducers)")
    return (f"Python memory: about {need} per task; an executor running {executor_cores} at once needs "
            f"{format_size(executor_cores * task_bytes)} beyond its JVM heap (spark.executor.pyspark.memory, or "
            f"spark.executor.memoryOverhead on YARN and Kubernetes)")


#: the driver's Python memory per vocabulary entry of a Spark ML fit (:mod:`drivers.api.model`): the term's document and
#: collection frequencies, the term itself (a string) and their Arrow copies when ``vocab.parquet`` is written
ESTIMATOR_BYTES_PER_TERM = 128


def estimator_memory_problem(num_topics: int, vocab_size: int, machine: int | None = None) -> str | None:
    """Why a Spark ML fit of ``num_topics`` topics over vectors of size ``vocab_size`` cannot fit on this driver
    (its vocabulary arrays and four copies of the K x V topic matrix in the driver's Python), checked before
    anything of that size is allocated; None when it fits. (Two rows of ``Vectors.sparse(10**9, ...)`` drove the
    driver to 19 GB and the out-of-memory killer.)"""
    needed = PYTHON_BASE_BYTES + ESTIMATOR_BYTES_PER_TERM * vocab_size + 4 * 8 * num_topics * vocab_size
    machine = physical_memory() if machine is None else machine
    if machine is None or needed <= 0.75 * machine:
        return None
    return (f"k={num_topics} topics over vectors of size {vocab_size} need about {format_size(needed)} of memory "
            f"in the driver (the vocabulary and the K x V topic matrix), more than this machine can give "
            f"({format_size(machine)} in all): set a smaller vector size (CountVectorizer's vocabSize or minDF, "
            f"HashingTF's numFeatures) or a smaller k")
