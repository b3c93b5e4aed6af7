"""The completion marker of a directory published whole (:mod:`drivers.store.publish`): ``_SUCCESS``, written last.

The marker is a manifest: the publication's token, when it was written, every file's size (``files``) and a
content hash of every file (``blake2b``: BLAKE2b with 16-byte digests, streamed in 1 MiB reads). The run files
(``_lease.json``, ``_checkpoint/``) belong to the run, not to the directory, and are left out.

:func:`require_complete` refuses in one line a directory without its marker, with a damaged marker, with a file
missing, or with a file whose size or content changed since it was written: a same-size edit (one digit of alpha in
``model.json``, two rows of ``lambda.npy`` swapped) changes the hash. A file's hash is computed once per process and
file version (cached by path, size and modification time), so a model opened again in one process is not read
twice. Manifests written before hashes (no ``blake2b``) are checked by size.
"""
from __future__ import annotations

import hashlib
import time
import uuid

from drivers import storage
from inference.errors import DamagedError

MARKER = "_SUCCESS"
HASHES = "blake2b"

#: what belongs to a run, not to the directory: kept in it across publications, never in its manifest
RUN_FILES = ("_lease.json", "_checkpoint")

_CHUNK = 1 << 20
#: (filesystem, path, size, mtime_ns) -> hex digest of the files this process has hashed while reading
_DIGESTS: dict = {}


def new_token() -> str:
    return uuid.uuid4().hex[:16]


def _infos(directory: str) -> tuple:
    """(filesystem, {relative path: FileInfo}) of every file under ``directory`` but the marker and run files."""
    filesystem, root = storage.resolve(directory)
    from pyarrow import fs as pafs

    out = {}
    for info in filesystem.get_file_info(pafs.FileSelector(root, recursive=True)):
        if info.type == pafs.FileType.File:
            rel = info.path[len(root.rstrip("/")) + 1:]
            if rel != MARKER and not rel.startswith(RUN_FILES):
                out[rel] = info
    return filesystem, dict(sorted(out.items()))


def _digest(filesystem, info, cached: bool) -> str:
    key = (filesystem.type_name, info.path, info.size, info.mtime_ns)
    if cached and info.mtime_ns is not None and key in _DIGESTS:
        return _DIGESTS[key]
    digest = hashlib.blake2b(digest_size=16)
    with filesystem.open_input_stream(info.path) as stream:
        while chunk := stream.read(_CHUNK):
            digest.update(chunk)
    if cached and info.mtime_ns is not None:
        _DIGESTS[key] = digest.hexdigest()
    return digest.hexdigest()


def write_marker(directory: str, token: str, **extra) -> dict:
    """The completion marker, written last: the directory's files (sizes and content hashes) and the token."""
    filesystem, infos = _infos(directory)
    marker = {"token": token, "written": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "files": {rel: int(info.size) for rel, info in infos.items()},
              HASHES: {rel: _digest(filesystem, info, cached=False) for rel, info in infos.items()}, **extra}
    storage.save_json(storage.join(directory, MARKER), marker)
    return marker


def read_marker(directory: str) -> dict | None:
    path = storage.join(directory, MARKER)
    try:
        marker = storage.load_json(path)
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    return marker if isinstance(marker, dict) and "token" in marker else None


def require_complete(directory: str, check_sizes: bool = True, check_hashes: bool | None = None) -> dict:
    """The marker of a completely written directory, or a one-line refusal saying what is wrong. ``check_sizes``:
    compare the files with the manifest; ``check_hashes`` (default: as ``check_sizes``): their content too, where
    the manifest has hashes."""
    marker = read_marker(directory)
    if marker is None:
        if storage.exists(storage.join(directory, MARKER)):
            raise DamagedError(f"{directory}: its {MARKER} marker is damaged: the directory cannot be trusted; "
                               f"write it again")
        raise DamagedError(f"{directory} has no {MARKER} marker: it was not completely written (a run was "
                           f"interrupted, or it is still being written); run the job that writes it again")
    if not check_sizes:
        return marker
    sizes = marker.get("files") if isinstance(marker.get("files"), dict) else {}
    filesystem, found = _infos(directory)
    missing = [name for name in sizes if name not in found]
    changed = [name for name, size in sizes.items() if name in found and found[name].size != size]
    how = ""
    hashes = marker.get(HASHES)
    if not missing and not changed and isinstance(hashes, dict) and (check_hashes is None or check_hashes):
        changed = [name for name, digest in hashes.items()
                   if name not in found or _digest(filesystem, found[name], cached=True) != digest]
        how = ": same size, another content hash"
    if missing or changed:
        what = (f"{len(missing)} file(s) missing ({', '.join(missing[:3])})" if missing else
                f"{len(changed)} file(s) changed since it was written ({', '.join(changed[:3])}{how})")
        raise DamagedError(f"{directory}: {what}, compared with its {MARKER} manifest: the directory is damaged; "
                           f"write it again")
    return marker
