"""Small file helpers that work on local paths and on any pyarrow filesystem URI (hdfs://, s3://, file://).

Used by the driver for checkpoints and model files and by executors for the
per-partition gamma state, so both sides see the same files on a cluster.
Arrays are stored as ``.npy`` without pickle; metadata as JSON.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import re
import tokenize
import uuid

import numpy as np
from pyarrow import fs as pafs

from inference.errors import DamagedError


#: a URI's scheme (``hdfs://``, ``s3a://``, ``file:/``): what follows it is the store's, not this machine's
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:/")


def absolute(path: str) -> str:
    """A local path made absolute against this process's working directory (executors run in another one);
    a URI unchanged."""
    if _SCHEME.match(path):
        return path
    return os.path.abspath(path)


def is_uri(path: str) -> bool:
    """``hdfs://...``, ``s3a://...``, ``file:/...``: a path of a store, not of this machine's current folder."""
    return bool(_SCHEME.match(path))


def resolve(path: str):
    """(filesystem, path inside it) for a local path or a URI."""
    if "://" in path:
        return pafs.FileSystem.from_uri(path)
    return pafs.LocalFileSystem(), os.path.abspath(path)


def join(base: str, *parts: str) -> str:
    return "/".join([base.rstrip("/")] + [p.strip("/") for p in parts])


class OutsideDirectory(DamagedError):
    """A path read from a file (a model's, a root's, a corpus', a saved stage's) names a place outside the
    directory it belongs to."""


_DRIVE = re.compile(r"^[A-Za-z]:")


def join_inside(directory: str, relative, what: str = "a file name") -> str:
    """``directory/relative`` for a name read from a file of ``directory``: refused (:class:`OutsideDirectory`,
    one line) when it is not a non-empty relative path, is a URI or absolute, has a ``..`` part, or (a local
    directory) resolves through a symbolic link to a place outside ``directory``."""
    if not isinstance(relative, str) or not relative.strip("/") or "\x00" in relative \
            or relative.startswith(("/", "\\", "~")) or _SCHEME.match(relative) or "://" in relative \
            or _DRIVE.match(relative) or ".." in relative.replace("\\", "/").split("/"):
        raise OutsideDirectory(f"{directory}: {what} {str(relative)[:200]!r} is not a path inside it: refused")
    path = join(directory, relative)
    if not _SCHEME.match(directory):
        inside, real = os.path.realpath(directory), os.path.realpath(path)
        if real != inside and not real.startswith(inside.rstrip(os.sep) + os.sep):
            raise OutsideDirectory(f"{directory}: {what} {relative!r} leads outside it (a symbolic link to {real}): "
                                   f"refused")
    return path


def makedirs(path: str) -> None:
    filesystem, p = resolve(path)
    filesystem.create_dir(p, recursive=True)


def exists(path: str) -> bool:
    filesystem, p = resolve(path)
    return filesystem.get_file_info(p).type != pafs.FileType.NotFound


def delete(path: str) -> None:
    filesystem, p = resolve(path)
    info = filesystem.get_file_info(p)
    if info.type == pafs.FileType.Directory:
        filesystem.delete_dir(p)
    elif info.type == pafs.FileType.File:
        filesystem.delete_file(p)


def remove_if_empty(path: str) -> None:
    """Remove the directory ``path`` if it holds nothing (locally in one step: rmdir refuses a non-empty one)."""
    if "://" not in path:
        try:
            os.rmdir(path)
        except OSError:
            pass
    elif is_dir(path) and not list_dir(path):
        delete(path)


def is_dir(path: str) -> bool:
    filesystem, p = resolve(path)
    return filesystem.get_file_info(p).type == pafs.FileType.Directory


def list_files(path: str, limit: int) -> list[str]:
    """Base names of up to ``limit`` files under the directory ``path``, recursively, hidden ones
    (``_``/``.``) left out."""
    filesystem, p = resolve(path)
    names = []
    for info in filesystem.get_file_info(pafs.FileSelector(p, recursive=True)):
        if info.type == pafs.FileType.File and not info.base_name.startswith(("_", ".")):
            names.append(info.base_name)
            if len(names) >= limit:
                break
    return names


def list_dir(path: str) -> list[str]:
    filesystem, p = resolve(path)
    if filesystem.get_file_info(p).type != pafs.FileType.Directory:
        return []
    return sorted(info.base_name for info in filesystem.get_file_info(pafs.FileSelector(p)))


def move(source: str, target: str) -> None:
    """Rename a file or directory (on one filesystem)."""
    filesystem, src = resolve(source)
    _, dst = resolve(target)
    filesystem.move(src, dst)


def copy_tree(source: str, target: str) -> None:
    """Copy a file or a directory tree (pyarrow's copy_files, streamed; across filesystems too)."""
    source_fs, src = resolve(source)
    target_fs, dst = resolve(target)
    if source_fs.get_file_info(src).type == pafs.FileType.Directory:
        target_fs.create_dir(dst, recursive=True)
    pafs.copy_files(src, dst, source_filesystem=source_fs, destination_filesystem=target_fs)


def write_bytes(path: str, data: bytes) -> None:
    """Write atomically: to a temporary name, then rename (a retried task never leaves half a file)."""
    filesystem, p = resolve(path)
    parent = p.rsplit("/", 1)[0]
    filesystem.create_dir(parent, recursive=True)
    tmp = f"{parent}/.tmp-{uuid.uuid4().hex}"
    with filesystem.open_output_stream(tmp) as out:
        out.write(data)
    filesystem.move(tmp, p)


def read_bytes(path: str) -> bytes:
    filesystem, p = resolve(path)
    with filesystem.open_input_stream(p) as stream:
        return stream.read()


def save_npy(path: str, array: np.ndarray) -> None:
    buffer = io.BytesIO()
    np.save(buffer, np.asarray(array), allow_pickle=False)
    write_bytes(path, buffer.getvalue())


@contextlib.contextmanager
def _npy_header():
    """numpy's errors of a broken ``.npy`` header (its dict is parsed as Python: ``TokenError: EOF in multi-line
    statement``, SyntaxError) as ValueError, which the readers of model files report with the file's name."""
    try:
        yield
    except (SyntaxError, tokenize.TokenError, TypeError, EOFError, RecursionError) as exc:
        raise ValueError(f"not a .npy array: its header is broken ({type(exc).__name__}: {exc})") from None


def load_npy(path: str) -> np.ndarray:
    with _npy_header():
        return np.load(io.BytesIO(read_bytes(path)), allow_pickle=False)


def load_npy_rows(path: str, rows: np.ndarray) -> np.ndarray:
    """``array[rows]`` of a C-ordered .npy file without reading the other rows: memory-mapped for a local path,
    by byte ranges (neighbouring rows read together) on a filesystem URI."""
    rows = np.asarray(rows, dtype=np.int64)
    if "://" not in path:
        with _npy_header():
            return np.array(np.load(path, mmap_mode="r", allow_pickle=False)[rows])
    filesystem, p = resolve(path)
    with filesystem.open_input_file(p) as stream, _npy_header():
        version = np.lib.format.read_magic(stream)
        shape, fortran, dtype = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                                 else np.lib.format.read_array_header_2_0)(stream)
        if fortran or dtype.hasobject:
            raise ValueError(f"{path}: only C-ordered numeric arrays can be read by rows")
        start = stream.tell()
        row_bytes = int(np.prod(shape[1:], dtype=np.int64)) * dtype.itemsize
        out = np.empty((len(rows),) + tuple(shape[1:]), dtype=dtype)
        if len(rows) == 0:
            return out
        if rows.min() < 0 or rows.max() >= shape[0]:
            raise IndexError(f"{path}: rows outside 0..{shape[0] - 1}")
        order = np.argsort(rows, kind="stable")
        wanted = rows[order]
        # runs of rows at most GAP_ROWS apart are read in one request
        gap_rows = max(1, (1 << 16) // max(row_bytes, 1))
        breaks = np.flatnonzero(np.diff(wanted) > gap_rows) + 1
        flat = out.reshape(len(rows), -1)
        for run in np.split(np.arange(len(wanted)), breaks):
            first, last = int(wanted[run[0]]), int(wanted[run[-1]])
            data = stream.read_at((last - first + 1) * row_bytes, start + first * row_bytes)
            block = np.frombuffer(data, dtype=dtype).reshape(last - first + 1, -1)
            flat[order[run]] = block[wanted[run] - first]
        return out


def list_column(matrix: np.ndarray):
    """An (n, K) float array as an Arrow list<double> column of n rows (Spark reads it as array<double>)."""
    import pyarrow as pa

    n, k = matrix.shape
    offsets = pa.array(np.arange(0, (n + 1) * k, k, dtype=np.int32))
    return pa.ListArray.from_arrays(offsets, pa.array(np.ascontiguousarray(matrix, dtype=np.float64).ravel()))


def write_parquet(path: str, table) -> None:
    """Write an Arrow table as one Parquet file, atomically (executors write their part of a dataset)."""
    import pyarrow.parquet as pq

    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    write_bytes(path, buffer.getvalue())


def read_table(path: str, columns=None, filter=None):
    """A Parquet file or a directory of them as an Arrow table, read with pyarrow on the driver (any filesystem)."""
    import pyarrow.dataset as ds

    filesystem, p = resolve(path)
    return ds.dataset(p, filesystem=filesystem, format="parquet").to_table(columns=columns, filter=filter)


def read_vocab(path: str):
    """A vocabulary (``vocab.parquet`` of a corpus or a model: a Spark-written Parquet directory or a single file)
    as a pandas frame sorted by id, read with pyarrow on the driver; ids must be 0..V-1."""
    import pyarrow.parquet as pq

    filesystem, p = resolve(path)
    vocab = pq.read_table(p, filesystem=filesystem).to_pandas().sort_values("id").reset_index(drop=True)
    if len(vocab) and not (vocab["id"].to_numpy() == range(len(vocab))).all():
        raise ValueError(f"{path}: vocabulary ids must be 0..V-1 without gaps")
    return vocab


def save_json(path: str, obj) -> None:
    write_bytes(path, json.dumps(obj, indent=2, sort_keys=False).encode("utf-8"))


def load_json(path: str):
    return json.loads(read_bytes(path).decode("utf-8"))
