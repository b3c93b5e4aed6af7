"""Small file helpers that work on local paths and on any pyarrow filesystem URI (hdfs://, s3://, file://).

Used by the driver for checkpoints and model files and by executors for the
per-partition gamma state, so both sides see the same files on a cluster.
Arrays are stored as ``.npy`` without pickle; metadata as JSON.
"""
from __future__ import annotations

import io
import json
import os
import uuid

import numpy as np
from pyarrow import fs as pafs


def resolve(path: str):
    """(filesystem, path inside it) for a local path or a URI."""
    if "://" in path:
        return pafs.FileSystem.from_uri(path)
    return pafs.LocalFileSystem(), os.path.abspath(path)


def join(base: str, *parts: str) -> str:
    return "/".join([base.rstrip("/")] + [p.strip("/") for p in parts])


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


def load_npy(path: str) -> np.ndarray:
    return np.load(io.BytesIO(read_bytes(path)), allow_pickle=False)


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


def save_json(path: str, obj) -> None:
    write_bytes(path, json.dumps(obj, indent=2, sort_keys=False).encode("utf-8"))


def load_json(path: str):
    return json.loads(read_bytes(path).decode("utf-8"))
