"""PySpark's daemon (``python -m pyspark.daemon``) without the traceback of a Python worker the JVM retired.

The JVM closes the socket of every idle Python worker when no Python task has started or ended for a minute
(during one long stage: the Gibbs resident sampler, a long held-out scoring) and when the session stops. The
worker reads end-of-file, reports it into its socket buffer, and the daemon's flush of that buffer fails:
since PySpark 4.1 (``spark.python.daemon.killWorkerOnFlushFailure``) the daemon prints that
``BrokenPipeError``'s traceback to the job's stderr, though nothing failed. Here a worker whose socket is
gone exits quietly, as the JVM expects of it; any other error is reported as PySpark reports it.

``jobs.spark.get_spark`` runs local sessions' daemons with this module (``spark.python.daemon.module``).
"""
from __future__ import annotations

from pyspark import daemon

_pyspark_worker = daemon.worker


def worker(sock, authenticated: bool) -> int:
    """``pyspark.daemon.worker``; a socket the JVM closed ends the worker with status 1 (not reused)."""
    try:
        return _pyspark_worker(sock, authenticated)
    except (BrokenPipeError, ConnectionResetError):
        return 1


if __name__ == "__main__":
    daemon.worker = worker          # manager() looks the function up in its module at every fork
    daemon.manager()
