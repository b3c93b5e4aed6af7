"""Publishing a directory whole: written aside, a completion marker last, then moved into place.

One protocol for every directory a job writes: a model (``train --output``, a version of a model root), a corpus
(``prepare --output``, also the corpus ``infer`` prepares from raw text) and ``infer``'s results. The directory is
never written in place. The run (:func:`published`: under the target's lease, :mod:`drivers.store.lease`, after
:func:`recover`) writes it into a hidden sibling (:func:`staging_dir`), writes the marker ``_SUCCESS`` last (a
manifest: every file's size and content hash and a token naming this publication, :mod:`drivers.store.manifest`) and
then:

* a new target: one rename (atomic on POSIX and HDFS);
* an existing target (a model being replaced, or the directory that holds the run's lease and checkpoint): the
  two directories are exchanged in one step where the kernel can (Linux ``renameat2(RENAME_EXCHANGE)``), else
  renamed one after the other (the target is missing for that moment, never mixed). What is not the old
  directory's own (the user's files, the lease, the checkpoint) is moved into the new directory, then the old one
  is deleted.

Readers check the marker (:func:`require_complete`): a directory without one was not completely written, and a
marker whose token changed while the reader read the files means the directory was replaced meanwhile (the reader
reads again). A run killed at any point leaves the target as it was or the new directory complete. What it leaves
beside it is put right by the next run on the target (:func:`recover`): a complete publication whose target went
missing between the two renames is moved in, the user's files in the old directory (moved aside or exchanged out)
are given back, the rest is deleted. A reader gives the user's files back too (:func:`give_back`), deleting
nothing (it holds no lease).

On object stores without rename (S3) use a model root (:mod:`drivers.store.model_root`): its pointer ``LATEST`` is
written last, so no reader sees a version before it is complete.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import time
from contextlib import contextmanager

from drivers import storage
from drivers.store import lease
from drivers.store.manifest import (MARKER, RUN_FILES, new_token, read_marker, require_complete,  # noqa: F401 (the API)
                              write_marker)
from inference.errors import RefusedError

STAGING = ".publishing-"
REPLACED = ".replaced-"

log = logging.getLogger("spark_topics.publish")


def _sibling(target: str, kind: str, token: str) -> str:
    parent, name = _split(target)
    return storage.join(parent, f".{name}{kind}{token}")


def _split(path: str) -> tuple[str, str]:
    path = path.rstrip("/")
    if "://" not in path:
        path = os.path.abspath(path)
    parent, _, name = path.rpartition("/")
    return parent, name


def staging_dir(target: str, token: str) -> str:
    """The hidden sibling a publication of ``target`` is written into (same filesystem, so a rename moves it)."""
    return _sibling(target, STAGING, token)


def read_consistently(directory: str, read, attempts: int = 5, own_file=None):
    """``read(directory)`` between two looks at the marker with the same token: a directory replaced while it was
    read is read again (a reader never returns a mix of two publications). With ``own_file`` (what the writing
    job owns, :func:`publish`) the user's files a killed run left beside the directory are given back."""
    for attempt in range(attempts):
        before = _wait_for_target(directory)
        value = read(directory)
        after = read_marker(directory)
        if after is not None and after["token"] == before["token"]:
            if own_file is not None:
                give_back(directory, own_file)
            return value
        time.sleep(0.1 * (attempt + 1))
    raise RefusedError(f"{directory} kept changing while it was read ({attempts} attempts): another run is "
                       f"publishing to it; try again when it is done")


def _wait_for_target(directory: str, seconds: float = 2.0) -> dict:
    """The marker, waiting a moment when the directory is missing (between the two renames of a publication)."""
    deadline = time.monotonic() + seconds
    while not storage.exists(directory) and time.monotonic() < deadline:
        time.sleep(0.05)
    return require_complete(directory)


# --------------------------------------------------------------------------- moving into place

def _exchange(a: str, b: str) -> bool:
    """Swap two local directories in one step (Linux renameat2 RENAME_EXCHANGE); False where unsupported."""
    if "://" in a or "://" in b:
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    AT_FDCWD, RENAME_EXCHANGE = -100, 2
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if renameat2(AT_FDCWD, os.fsencode(a), AT_FDCWD, os.fsencode(b), RENAME_EXCHANGE) == 0:
        return True
    errno = ctypes.get_errno()
    if errno in (22, 38, 95):             # EINVAL, ENOSYS, EOPNOTSUPP: the filesystem cannot exchange
        return False
    raise OSError(errno, f"cannot exchange {a} and {b}: {os.strerror(errno)}")


#: test hook: called with a step name while writing and publishing ("model-written", "staged", "moved-aside",
#: "swapped", "version-moved")
STEP_HOOK = None


def step(name: str) -> None:
    """Mark a step of a publication (the tests kill runs at these)."""
    if STEP_HOOK is not None:
        STEP_HOOK(name)


def publish(staging: str, target: str, own_file=None) -> None:
    """Move the complete directory ``staging`` (its marker written) into place at ``target``.
    ``own_file(name)``: whether a file of the old target is the job's (deleted with it) rather than the user's
    (kept), besides what its manifest lists (all of it for a target written before markers)."""
    if read_marker(staging) is None:
        raise RuntimeError(f"{staging} has no {MARKER} marker: not publishing an incomplete directory")
    lease_file = storage.join(target, RUN_FILES[0])
    if storage.exists(lease_file):               # the run's lease goes with the new directory
        storage.write_bytes(storage.join(staging, RUN_FILES[0]), storage.read_bytes(lease_file))
    step("staged")
    if not storage.exists(target):
        storage.move(staging, target)
        return
    if _exchange(staging, target):
        old = staging
    else:
        old = _sibling(target, REPLACED, new_token())
        storage.move(target, old)
        step("moved-aside")
        storage.move(staging, target)
    step("swapped")
    _settle(old, target, own_file)


def _own(old: str, own_file):
    """Whether a top-level name of the old directory ``old`` is its own: listed in its manifest, or ``own_file``."""
    marker = read_marker(old)
    tops = {name.split("/", 1)[0] for name in (marker or {}).get("files", {})}
    return lambda name: name in tops or bool(own_file and own_file(name))


def _give_back(old: str, target: str, own_file, run_files: bool = True) -> None:
    """Move what is not the old directory's own (the user's files; with ``run_files`` the lease and checkpoint
    too) from ``old`` into ``target``, where ``target`` has no file of that name."""
    own = _own(old, own_file)
    for name in storage.list_dir(old):
        if name == MARKER or name.startswith(".tmp-") or own(name) or (not run_files and name in RUN_FILES):
            continue
        if not storage.exists(storage.join(target, name)):
            storage.move(storage.join(old, name), storage.join(target, name))


def _settle(old: str, target: str, own_file=None) -> None:
    """The user's files, lease and checkpoint from ``old`` into ``target``; then the old directory deleted."""
    _give_back(old, target, own_file)
    storage.delete(old)


@contextmanager
def publishing(target: str, own_file=None, **marker_fields):
    """``with publishing(target) as staging:`` write the directory into ``staging``; when the block ends without an
    error the marker is written and the directory published at ``target``; on an error nothing is published and
    the staging directory is removed."""
    token = new_token()
    staging = staging_dir(target, token)
    storage.makedirs(staging)
    written = False
    try:
        yield staging
        write_marker(staging, token, **marker_fields)
        written = True
        publish(staging, target, own_file)
    finally:
        # a failure after the marker may have exchanged the directories: what is at ``staging`` can then be the
        # old directory with the user's files, which :func:`recover` gives back on the next run, so it stays
        if not written and storage.exists(staging):
            storage.delete(staging)


@contextmanager
def published(target: str, job: str, own_file=None, leftovers: tuple = ()):
    """``with published(target, job) as staging:`` the whole protocol for a job that writes ``target``: its lease
    for the run, the leftovers of killed runs put right (:func:`recover`), then :func:`publishing`."""
    with lease.hold(target, job):
        recover(target, own_file, leftovers)
        with publishing(target, own_file) as staging:
            yield staging


def _leftovers(target: str, others: tuple = ()) -> list:
    """``(path, kind)`` of the hidden siblings of ``target`` that runs left: ``"new"`` a complete publication not
    moved in, ``"old"`` the previous directory moved aside or exchanged out (it may hold the user's files),
    ``"unpublished"`` a directory never completed (also siblings named ``.<name><prefix>`` for a prefix of
    ``others``, an older protocol's)."""
    parent, name = _split(target)
    current = (read_marker(target) or {}).get("token") if storage.exists(target) else None
    found = []
    for sibling in storage.list_dir(parent):
        path = storage.join(parent, sibling)
        if sibling.startswith(f".{name}{REPLACED}"):
            found.append((path, "old"))
        elif sibling.startswith(f".{name}{STAGING}"):
            token = sibling[len(f".{name}{STAGING}"):]
            marker = read_marker(path)
            if token == current:                   # exchanged: the target holds this publication
                found.append((path, "old"))
            elif marker is None:
                found.append((path, "unpublished"))
            else:
                found.append((path, "new" if marker["token"] == token else "old"))
        elif any(sibling.startswith(f".{name}{prefix}") for prefix in others):
            found.append((path, "unpublished"))
    return found


def _absent(target: str) -> bool:
    """No directory at ``target``, or one holding nothing but run files (the lease a run took before recovering)."""
    return not storage.exists(target) or (
        read_marker(target) is None and all(name in RUN_FILES for name in storage.list_dir(target)))


def _move_in(path: str, target: str) -> None:
    """A complete directory at ``path`` into place at ``target`` (which holds at most run files): renamed whole, or
    its files moved in with the marker last (the run's lease stays where it is)."""
    if not storage.exists(target):
        storage.move(path, target)
        return
    for name in storage.list_dir(path):
        if name != MARKER and not storage.exists(storage.join(target, name)):
            storage.move(storage.join(path, name), storage.join(target, name))
    if storage.exists(storage.join(path, MARKER)):
        storage.move(storage.join(path, MARKER), storage.join(target, MARKER))
    storage.delete(path)


def recover(target: str, own_file=None, others: tuple = ()) -> None:
    """Put right what runs on ``target`` killed while publishing left (call while holding its lease): a complete
    publication whose target went missing between the two renames is moved into place (else the old directory is
    put back); an old directory gives its non-own files back and is deleted; the rest is deleted."""
    for path, kind in _leftovers(target, others):
        if kind != "unpublished" and _absent(target):
            log.warning("%s %s from %s (a killed run had moved it aside)",
                        "completing the publication of" if kind == "new" else "restoring", target, path)
            _move_in(path, target)
            continue
        log.warning("removing %s, left by a killed run", path)
        if kind == "old":
            _settle(path, target, own_file)
        else:
            storage.delete(path)             # a new directory never published (or half written): the work is redone


def give_back(target: str, own_file=None) -> None:
    """A reader's part of :func:`recover`: the user's files that a run killed right after moving the old directory
    out left in it go back into ``target`` (nothing is deleted: the next run on the target does that)."""
    for path, kind in _leftovers(target):
        if kind == "old":
            try:
                _give_back(path, target, own_file, run_files=False)
            except OSError as exc:               # another process moved them meanwhile, or no permission
                log.warning("could not give back the files in %s: %s", path, exc)
