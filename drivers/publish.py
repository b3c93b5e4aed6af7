"""Publishing a directory whole: written aside, a completion marker last, then moved into place.

A model directory (``train --output``, a version of a model root) is never written in place. The run writes it
into a hidden sibling (:func:`staging_dir`), writes the marker ``_SUCCESS`` last (a manifest: every file's size
and a token naming this publication) and then:

* a new target: one rename (atomic on POSIX and HDFS);
* an existing target (a model being replaced, or the directory that holds the run's lease and checkpoint): the
  two directories are exchanged in one step where the kernel can (Linux ``renameat2(RENAME_EXCHANGE)``), else
  renamed one after the other (the target is missing for that moment, never mixed). What is not the old model's
  (the user's own files, the lease, the checkpoint) is moved into the new directory, then the old model is
  deleted.

Readers check the marker (:func:`require_complete`): a directory without one was not completely written, and a
marker whose token changed while the reader read the files means the model was replaced meanwhile (the reader
reads again). A run killed at any point leaves the target as it was or the new model complete; the hidden
siblings it leaves are cleaned up by the next run on the target (:func:`recover`), which rolls a complete
publication forward if the target went missing between the two renames.

On object stores without rename (S3) use a model root (:mod:`drivers.model_root`): its pointer ``LATEST`` is
written last, so no reader sees a version before it is complete.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import time
import uuid
from contextlib import contextmanager

from drivers import storage

MARKER = "_SUCCESS"
STAGING = ".publishing-"
REPLACED = ".replaced-"

#: what belongs to a run, not to the model: kept in the directory across publications
RUN_FILES = ("_lease.json", "_checkpoint")

log = logging.getLogger("spark_topics.publish")


def new_token() -> str:
    return uuid.uuid4().hex[:16]


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


def _files(directory: str) -> dict:
    """Relative path -> size of every file under ``directory`` (the marker left out)."""
    filesystem, root = storage.resolve(directory)
    from pyarrow import fs as pafs

    out = {}
    for info in filesystem.get_file_info(pafs.FileSelector(root, recursive=True)):
        if info.type == pafs.FileType.File:
            rel = info.path[len(root.rstrip("/")) + 1:]
            if rel != MARKER and not rel.startswith(RUN_FILES):
                out[rel] = int(info.size)
    return dict(sorted(out.items()))


def write_marker(directory: str, token: str, **extra) -> dict:
    """The completion marker, written last: a manifest of the directory's files and the publication's token."""
    marker = {"token": token, "written": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "files": _files(directory), **extra}
    storage.save_json(storage.join(directory, MARKER), marker)
    return marker


def read_marker(directory: str) -> dict | None:
    path = storage.join(directory, MARKER)
    try:
        marker = storage.load_json(path)
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    return marker if isinstance(marker, dict) and "token" in marker else None


def require_complete(directory: str, check_sizes: bool = True) -> dict:
    """The marker of a completely written directory, or a one-line refusal saying what is wrong."""
    marker = read_marker(directory)
    if marker is None:
        if storage.exists(storage.join(directory, MARKER)):
            raise SystemExit(f"{directory}: its {MARKER} marker is damaged: the directory cannot be trusted; "
                             f"write it again")
        raise SystemExit(f"{directory} has no {MARKER} marker: it was not completely written (a run was "
                         f"interrupted, or it is still being written); run the job that writes it again")
    if check_sizes:
        found = _files(directory)
        missing = [name for name in marker.get("files", {}) if name not in found]
        changed = [name for name, size in marker.get("files", {}).items() if name in found and found[name] != size]
        if missing or changed:
            what = (f"{len(missing)} file(s) missing ({', '.join(missing[:3])})" if missing else
                    f"{len(changed)} file(s) changed since it was written ({', '.join(changed[:3])})")
            raise SystemExit(f"{directory}: {what}, compared with its {MARKER} manifest: the directory is damaged; "
                             f"write it again")
    return marker


def read_consistently(directory: str, read, attempts: int = 5):
    """``read(directory)`` between two looks at the marker with the same token: a directory replaced while it was
    read is read again (a reader never returns a mix of two publications)."""
    for attempt in range(attempts):
        before = _wait_for_target(directory)
        value = read(directory)
        after = read_marker(directory)
        if after is not None and after["token"] == before["token"]:
            return value
        time.sleep(0.1 * (attempt + 1))
    raise SystemExit(f"{directory} kept changing while it was read ({attempts} attempts): another run is "
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


def publish(staging: str, target: str, old_model_file=None) -> None:
    """Move the complete directory ``staging`` (its marker written) into place at ``target``.
    ``old_model_file(name)``: whether a file of a target without a manifest (written before markers) belongs to
    its model (deleted with it) rather than to the user (kept)."""
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
    _settle(old, target, old_model_file)


def _settle(old: str, target: str, old_model_file=None) -> None:
    """Move what is not the old model (the user's files, the run's lease and checkpoint) from ``old`` into
    ``target``, then delete the old model."""
    marker = read_marker(old)
    if marker is not None:
        model_tops = {name.split("/", 1)[0] for name in marker.get("files", {})}
        is_model = model_tops.__contains__
    else:
        is_model = old_model_file or (lambda name: False)
    for name in storage.list_dir(old):
        if name == MARKER or name.startswith(".tmp-") or is_model(name):
            continue
        if not storage.exists(storage.join(target, name)):
            storage.move(storage.join(old, name), storage.join(target, name))
    storage.delete(old)


@contextmanager
def publishing(target: str, old_model_file=None, **marker_fields):
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
        publish(staging, target, old_model_file)
    finally:
        # a failure after the marker may have exchanged the directories: what is at ``staging`` can then be the
        # old model with the user's files, which :func:`recover` gives back on the next run, so it stays
        if not written and storage.exists(staging):
            storage.delete(staging)


def recover(target: str, old_model_file=None) -> None:
    """Clean up after runs on ``target`` that were killed while publishing (call while holding its lease): a
    complete publication whose target went missing between the two renames is moved into place; other
    siblings (unpublished staging, replaced models) give their non-model files back and are deleted."""
    parent, name = _split(target)
    for sibling in storage.list_dir(parent):
        if not sibling.startswith(f".{name}{STAGING}") and not sibling.startswith(f".{name}{REPLACED}"):
            continue
        path = storage.join(parent, sibling)
        marker = read_marker(path)
        ours = sibling.startswith(f".{name}{STAGING}") and marker is not None \
            and sibling.endswith(STAGING + marker["token"])
        old_model = not ours and (marker is not None or sibling.startswith(f".{name}{REPLACED}"))
        if not storage.exists(target) and (ours or old_model):
            log.warning("%s %s from %s (a killed run had moved it aside)",
                        "completing the publication of" if ours else "restoring", target, path)
            storage.move(path, target)
            continue
        log.warning("removing %s, left by a killed run", path)
        if old_model:
            _settle(path, target, old_model_file)
        else:
            storage.delete(path)             # a new model never published (or half written): the work is redone
