"""One run at a time per output directory: a lease file ``<dir>/_lease.json`` that names its holder.

``hold(directory, job)`` creates the lease exclusively (``O_CREAT | O_EXCL`` on a local filesystem) for the run's
duration and removes it at the end, also on errors; a second run on the same output refuses in one line naming
the holder (job, host, pid, start time). A lease left by a killed run is taken over safely: its holder is on
this host and its process is gone, so it is deleted under an exclusive takeover guard (``_lease.json.takeover``:
one run at a time, which re-reads the lease as the stale one before deleting it) and then created anew; an
empty lease file (a run killed between its create and its write) likewise once it is EMPTY_LEASE_SECONDS old. A lease of another host is never presumed dead: the message says
which file to delete once that run is known to be gone.

On a store named by a URI the lease is created through Hadoop's FileSystem API on the driver's JVM (pyarrow's
filesystem layer has no exclusive create, ``../shared/spec/refresh.md``): ``createFile(path).overwrite(false)``,
which HDFS's NameNode makes atomic (as do ABFS and GCS), plus, on S3A, the builder option
``fs.option.create.conditional.overwrite`` when the store declares it (Hadoop 3.4.2+: a PUT with
``If-None-Match: *``, which the second writer loses). Without a running SparkContext, a Hadoop filesystem for the
scheme, or on S3A without conditional writes, the lease is advisory: written when absent and read back, which
refuses every run that starts after another has written its lease but cannot order two that start within the
same moment (a warning says so).
"""
from __future__ import annotations

import json
import logging
import os
import socket
import time
import uuid
from contextlib import contextmanager

from drivers import storage
from inference.errors import DamagedError, RefusedError

LEASE = "_lease.json"

log = logging.getLogger("spark_topics.lease")


def _holder(job: str) -> dict:
    return {"token": uuid.uuid4().hex, "job": job, "host": socket.gethostname(), "pid": os.getpid(),
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def _create(path: str, holder: dict) -> bool:
    """Create the lease file with ``holder`` unless it exists; True when this call created it."""
    data = json.dumps(holder).encode("utf-8")
    if path.startswith("file://"):
        path = path[len("file://"):]
    if "://" not in path:
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            return False
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        return True
    created = create_exclusive_hadoop(path, data)
    if created is not None:
        return created
    if storage.exists(path):                     # advisory on stores without an exclusive create
        return False
    storage.write_bytes(path, data)
    return _read(path).get("token") == holder["token"]


CONDITIONAL_CREATE = "fs.option.create.conditional.overwrite"
_EXISTS = ("org.apache.hadoop.fs.FileAlreadyExistsException", "org.apache.hadoop.fs.s3a.RemoteFileChangedException")


def create_exclusive_hadoop(uri: str, data: bytes, sc=None) -> bool | None:
    """Create ``uri`` with ``data`` through Hadoop's FileSystem on the driver's JVM, failing if it exists: True
    when created, False when it existed, None when there is no SparkContext or no Hadoop filesystem for the
    scheme, or when the store offers no exclusive create (S3A without conditional writes)."""
    from pyspark import SparkContext

    sc = sc or SparkContext._active_spark_context
    if sc is None:
        return None
    from py4j.protocol import Py4JJavaError

    jvm = sc._jvm
    path = jvm.org.apache.hadoop.fs.Path(uri)
    try:
        filesystem = path.getFileSystem(sc._jsc.hadoopConfiguration())
    except Py4JJavaError as exc:                 # no FileSystem for scheme ...
        log.warning("no Hadoop filesystem for %s (%s): the lease is advisory", uri, _java_message(exc))
        return None
    builder = filesystem.createFile(path).overwrite(False)
    if filesystem.getScheme() in ("s3a", "s3n", "s3"):
        if not filesystem.hasPathCapability(path, CONDITIONAL_CREATE):
            log.warning("%s: this S3 filesystem offers no conditional create (Hadoop 3.4.2+ with "
                        "fs.s3a.create.conditional.enabled): the lease is advisory", uri)
            return None
        builder = builder.must(CONDITIONAL_CREATE, True)
    try:
        out = builder.build()
        try:
            out.write(bytearray(data))
        finally:
            out.close()                          # S3A: the conditional PUT happens here
    except Py4JJavaError as exc:
        if _java_class(exc) in _EXISTS or "412" in _java_message(exc):
            return False
        raise
    return True


def _java_class(exc) -> str:
    return exc.java_exception.getClass().getName()


def _java_message(exc) -> str:
    return f"{_java_class(exc)}: {exc.java_exception.getMessage()}"


def _read(path: str) -> dict:
    try:
        holder = json.loads(storage.read_bytes(path).decode("utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return {}
    return holder if isinstance(holder, dict) else {}


#: an empty lease file older than this was left by a run killed between its exclusive create and its write
#: (microseconds apart), and is taken over; a younger one is waited for
EMPTY_LEASE_SECONDS = 5.0


def _problem(path: str) -> str | None:
    """What makes an existing lease file unusable ("empty", or a description), None for a holder record."""
    local = path[len("file://"):] if path.startswith("file://") else path
    if "://" not in local and os.path.isdir(local):
        return "a directory"
    try:
        data = storage.read_bytes(path)
    except OSError as exc:
        return f"unreadable: {exc.strerror or exc}"
    if not data:
        return "empty"
    try:
        holder = json.loads(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return "not JSON"
    return None if isinstance(holder, dict) and holder.get("token") else "not a lease record"


def _empty_for(path: str) -> float:
    """Seconds since an empty local lease file was last written (0 for a store named by a URI: never taken)."""
    if "://" in path and not path.startswith("file://"):
        return 0.0
    try:
        return time.time() - os.stat(path.removeprefix("file://")).st_mtime
    except OSError:
        return 0.0


def _process_gone(pid: int) -> bool:
    """No such process, or a zombie (killed, not yet reaped by its parent)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:                      # alive, another user's
        return False
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] == b"Z"
    except (OSError, IndexError):
        return False


def is_stale(holder: dict, wait: float = 2.0) -> bool:
    """A lease whose holder ran on this host and whose process no longer exists (a killed run); a process of
    this host that is still there is given ``wait`` seconds to finish dying (a run started right after a kill)."""
    try:
        pid = int(holder.get("pid"))
    except (TypeError, ValueError):
        return False
    if holder.get("host") != socket.gethostname() or pid == os.getpid():
        return False
    deadline = time.monotonic() + wait
    while not _process_gone(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


def describe(holder: dict) -> str:
    return (f"{holder.get('job', 'a run')} started {holder.get('started', '?')} on {holder.get('host', '?')} "
            f"(pid {holder.get('pid', '?')})")


def acquire(directory: str, job: str) -> dict:
    """Take the lease of ``directory`` (created if missing) for ``job``; returns the holder record written, or
    refuses (RefusedError) naming the run that holds it."""
    storage.makedirs(directory)
    path = storage.join(directory, LEASE)
    mine = _holder(job)
    attempts = guard_waits = 0
    while attempts < 3:
        attempts += 1
        if _create(path, mine):
            return mine
        theirs = _read(path)
        if not theirs and not storage.exists(path):
            continue                              # released meanwhile: try again
        problem = None if theirs.get("token") else _problem(path)
        if problem == "empty":
            if _empty_for(path) < EMPTY_LEASE_SECONDS:
                time.sleep(0.1)                   # its writer may be between create and write
                attempts -= 1
                continue
            if not _remove_under_guard(path, mine, lambda: _is_old_empty(path)):
                guard_waits += 1                  # another run is taking it over: then both race to create
                if guard_waits > 200:
                    raise _guard_stays(path)
                time.sleep(0.05)
                attempts -= 1
                continue
            log.warning("took over the empty lease %s (a run killed as it created it)", path)
            continue
        if problem is not None:
            raise DamagedError(f"{path} is not a lease ({problem}): if no run is using {directory}, delete it")
        if is_stale(theirs):
            if not _remove_under_guard(path, mine, lambda: _read(path).get("token") == theirs.get("token")):
                guard_waits += 1                  # another run is removing it: then both race to create
                if guard_waits > 200:
                    raise _guard_stays(path)
                time.sleep(0.05)
                attempts -= 1
                continue
            log.warning("took over the lease of %s left by a killed run: %s", directory, describe(theirs))
            continue
        raise RefusedError(f"{directory} is in use by another run: {describe(theirs)}. Wait for it to finish; if "
                           f"that run is dead, delete {path}")
    raise RefusedError(f"could not take the lease {path}: other runs keep taking it")


def _is_old_empty(path: str) -> bool:
    """The lease file is still empty and older than EMPTY_LEASE_SECONDS (its creator was killed before writing)."""
    try:
        return not storage.read_bytes(path) and _empty_for(path) >= EMPTY_LEASE_SECONDS
    except OSError:
        return False


def _remove_under_guard(path: str, mine: dict, still_takeable) -> bool:
    """Delete the lease at ``path`` holding the takeover guard (``path.takeover``, created exclusively), if
    ``still_takeable()`` says, re-read under the guard, that it is still the stale or empty lease this run found.
    Only the guard's holder removes a lease, and only that one: a fresh lease another run created meanwhile is never
    touched (moving a lease aside to check it opened a window in which a third run created one too: two winners).
    False when another run holds the guard (a guard older than EMPTY_LEASE_SECONDS, its holder killed, is
    deleted)."""
    guard = f"{path}.takeover"
    if not _create(guard, mine):
        if _empty_for(guard) > EMPTY_LEASE_SECONDS:
            try:
                storage.delete(guard)
            except OSError:
                pass                              # another run deleted it first
        return False
    try:
        if still_takeable():
            storage.delete(path)
    finally:
        storage.delete(guard)
    return True


def _guard_stays(path: str) -> RefusedError:
    return RefusedError(f"could not take the lease {path}: {path}.takeover stays (a run taking over a stale "
                        "lease); if no run is using it, delete it")


def release(directory: str, holder: dict) -> None:
    """Remove the lease if it is still ``holder``'s."""
    path = storage.join(directory, LEASE)
    if _read(path).get("token") == holder["token"]:
        storage.delete(path)


@contextmanager
def hold(directory: str, job: str):
    """The lease of ``directory`` for the duration of the block (released on errors too). A directory the lease
    created is removed again when the run leaves it empty (a failed run leaves no empty output behind)."""
    created = not storage.exists(directory)
    holder = acquire(directory, job)
    try:
        yield holder
    finally:
        release(directory, holder)
        if created:
            storage.remove_if_empty(directory)
