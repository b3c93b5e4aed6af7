"""PySpark's daemon (``python -m pyspark.daemon``) for local jobs: workers that start warm and retire quietly.

**Warm workers.** The daemon forks one Python worker per task slot (again after the JVM retires an idle one). A
worker used to import PySpark's worker modules (compiled from ``pyspark.zip`` each time: a zip holds no bytecode
cache), pandas, pyarrow, numba and the project's modules itself, and PySpark's daemon runs a full ``gc.collect()``
after every task, which walks every object those imports made: on the tests of ``evaluate`` the workers spent
about two thirds of their CPU importing and collecting. Here the daemon imports them once, before it forks, and
moves them out of the collector's reach (``gc.freeze``): every worker inherits them, and its collection after a
task walks only what the task made.

**Quiet retirement.** The JVM closes the socket of every idle Python worker when no Python task has started or
ended for a minute (during one long stage: the Gibbs resident sampler, a long held-out scoring) and when the
session stops. The worker reads end-of-file, reports it into its socket buffer, and the daemon's flush of that
buffer fails: since PySpark 4.1 (``spark.python.daemon.killWorkerOnFlushFailure``) the daemon prints that
``BrokenPipeError``'s traceback to the job's stderr, though nothing failed. Here a worker whose socket is gone
exits quietly, as the JVM expects of it; any other error is reported as PySpark reports it.

``jobs.spark.get_spark`` runs local sessions' daemons with this module (``spark.python.daemon.module``), and
``deploy/submit.sh`` local and standalone-cluster jobs' (an executor imports it from the code zip it fetched into its
folder; what a cluster's interpreter lacks of :data:`PRELOADED_MODULES` its workers import themselves, as before).
"""
from __future__ import annotations

import contextlib
import gc
import importlib
import os
import pkgutil
import sys


def _installed_pyspark_first() -> None:
    """Import PySpark from its installed package (bytecode cached) rather than the ``pyspark.zip`` inside it that
    Spark puts first on a local worker's path (compiled from source by every daemon): the same files."""
    from importlib.machinery import PathFinder

    zips = [p for p in sys.path if os.path.basename(p) == "pyspark.zip"]
    spec = PathFinder.find_spec("pyspark", [p for p in sys.path if p not in zips and not p.endswith(".jar")])
    if not zips or spec is None or not spec.origin or "pyspark" in sys.modules:
        return
    inside = os.path.realpath(os.path.join(os.path.dirname(spec.origin), "python", "lib", "pyspark.zip"))
    for path in zips:
        if os.path.realpath(path) == inside:
            sys.path.remove(path)
            sys.path.append(path)


if __name__ == "__main__":
    _installed_pyspark_first()

from pyspark import daemon  # noqa: E402 - after the path is set

_pyspark_worker = daemon.worker

#: what the workers of the project's jobs import: PySpark's worker and its Arrow serializers, the libraries the
#: tasks use, and every module of the project's packages below the jobs (tasks unpickle functions of any of them)
PRELOADED_MODULES = ("pyspark.worker", "pyspark.sql.pandas.serializers", "pandas", "pyarrow", "numba",
                     "scipy.special")
PRELOADED_PACKAGES = ("inference", "partitioners", "drivers")


def preload() -> list[str]:
    """Import :data:`PRELOADED_MODULES` and every module of :data:`PRELOADED_PACKAGES`, then freeze what exists
    out of the garbage collector (forked workers share it unchanged). Returns the modules that failed to import
    (a worker imports those itself, as before)."""
    failed = []

    def load(name):
        try:
            return importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a worker that needs it imports it itself and reports the error
            failed.append(name)

    # the daemon tells the JVM its port on stdout: nothing imported may print there
    with contextlib.redirect_stdout(sys.stderr):
        for name in PRELOADED_MODULES:
            load(name)
        for package in filter(None, map(load, PRELOADED_PACKAGES)):
            for module in pkgutil.walk_packages(package.__path__, package.__name__ + ".", onerror=failed.append):
                load(module.name)
    gc.collect()
    gc.freeze()
    return failed


def worker(sock, authenticated: bool) -> int:
    """``pyspark.daemon.worker``; a socket the JVM closed ends the worker with status 1 (not reused)."""
    try:
        return _pyspark_worker(sock, authenticated)
    except (BrokenPipeError, ConnectionResetError):
        return 1


if __name__ == "__main__":
    preload()
    daemon.worker = worker          # manager() looks the function up in its module at every fork
    daemon.manager()
