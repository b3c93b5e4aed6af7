"""Spark memory sized from the model: a run that cannot fit is refused before the first iteration.

The driver of both engines holds dense K x V topic-word matrices and moves them through the JVM every iteration
(the broadcast to the mappers, the reducers' rows collected back), so the JVM heap of the driver
(``spark.driver.memory``) must grow with K x V. :func:`driver_memory_conf` chooses it for a local run (unless the
user set it) and refuses, in one line saying what to set, a run whose setting is too small or that this machine
cannot hold.
"""
from __future__ import annotations

import os

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
    (``can_set``: a local run that creates its Spark session); otherwise a one-line refusal (SystemExit)."""
    machine = physical_memory() if machine is None else machine
    if machine is not None and needed > 0.75 * machine:
        raise SystemExit(f"the model needs about {format_size(needed)} of driver memory, more than this machine can "
                         f"give ({format_size(machine)} in all): use fewer topics, a smaller vocabulary "
                         f"(prepare --max-vocab), or a cluster whose driver has spark.driver.memory >= "
                         f"{format_size(needed)}")
    if given is not None:
        if parse_size(given) >= needed:
            return None
        raise SystemExit(f"spark.driver.memory={given} is too small for this model (about {format_size(needed)} "
                         f"needed): set --conf spark.driver.memory={format_size(needed)} (spark-submit: "
                         f"--driver-memory {format_size(needed)}), or use fewer topics or a smaller vocabulary")
    if not can_set:
        if needed <= DEFAULT_BYTES:
            return None
        raise SystemExit(f"the model needs about {format_size(needed)} of driver memory, more than Spark's default "
                         f"1g: pass --driver-memory {format_size(needed)} to spark-submit")
    return format_size(max(needed, DEFAULT_BYTES))
