"""Model roots: the versions of one model, refreshed over time, and the pointer to the current one.

::

    ROOT/LATEST                       the current version's name (one small file, written last)
    ROOT/versions/<NNNNNN>-<stamp>/   a model directory each (the ordinary format, with its _SUCCESS marker),
                                      plus what its refresh ingested (ledger.parquet) and reported
    ROOT/doc_topics/version=<V>/      the document-topic table: each committed version's doc_topics.parquet
                                      (and version=base: the base model's training documents), one
                                      partition per version (``spark.read.parquet("ROOT/doc_topics")``)
    ROOT/_lease.json                  held by the run that refreshes the root (:mod:`drivers.store.lease`)

A version is written into a hidden staging folder under ``versions/``, marked complete, renamed to its name
and only then named by ``LATEST`` (:mod:`drivers.store.publish`), so a reader that follows ``LATEST`` never sees a
version that is not complete, also on stores without rename (there the version is written in place and the
pointer is still written last). Versions are never renamed or reused; ``--rollback`` only moves the pointer.
Each version's ``model.json`` names its ``parent``: the versions a root has committed are the chain of parents
from ``LATEST`` (a version left by a killed run, or abandoned by a rollback, is not in it).
"""
from __future__ import annotations

import re
import time

from drivers import storage
from drivers.store import publish
from drivers.store.base_link import base_doc_topics, copy_training_rows, stored_path
from inference.errors import DamagedError, RefusedError, UsageError

LATEST = "LATEST"
VERSIONS = "versions"
DOC_TOPICS = "doc_topics"          # the table: ROOT/doc_topics/version=<V>/
BASE_PARTITION = "base"
BASE_NAMES = ("base", "0")             # version 0: the base model (drivers.refresh.base_version)
VERSION_NAME = re.compile(r"^(\d{6})-(\d{8}T\d{6}Z)$")


def is_root(path: str) -> bool:
    return storage.exists(storage.join(path, LATEST)) or storage.is_dir(storage.join(path, VERSIONS))


def version_dir(root: str, version: str) -> str:
    """``ROOT/versions/<version>``, refused when the name or a symbolic link leads outside ``versions/``."""
    return storage.join_inside(storage.join(root, VERSIONS), version, "a version")


def latest(root: str) -> str | None:
    """The name ``LATEST`` holds (None for a root without a published version)."""
    path = storage.join(root, LATEST)
    if not storage.exists(path):
        return None
    name = storage.read_bytes(path).decode("utf-8").strip()
    if not VERSION_NAME.match(name):
        raise DamagedError(f"{path} does not name a version ({name[:40]!r}): the model root is damaged")
    return name


def versions(root: str) -> list[str]:
    """Every version folder of the root, oldest first (published or not)."""
    return sorted(n for n in storage.list_dir(storage.join(root, VERSIONS)) if VERSION_NAME.match(n))


def resolve(path: str, version: str | None = None) -> str:
    """The model directory to read: ``path`` itself, or for a model root its ``version`` (default: LATEST);
    one-line refusals for a root without versions, an unknown version, or ``--version`` on a plain directory."""
    if not is_root(path):
        if version is not None:
            raise UsageError(f"--version {version}: {path} is a model directory, not a model root (it has no "
                             f"{LATEST} or {VERSIONS}/)")
        return path
    name = version if version is not None else latest(path)
    if name is not None and version is not None:           # 3, 000003, base, latest, or the full name
        name = version_name(path, version)
    if name is None:
        raise UsageError(f"{path} is a model root without a published version (no {LATEST}); run `spark-topics "
                         f"refresh --model {path} --base MODEL_DIR --input NEW_DOCS` to create its first version")
    known = versions(path)
    if name not in known:
        prefix = [v for v in known if v.startswith(name)]       # a version named by its number: 000003
        if len(prefix) != 1:
            raise UsageError(f"{path} has no version {name!r} (versions: {', '.join(known[-5:]) or 'none'})")
        name = prefix[0]
    if is_pruned(version_dir(path, name)):
        raise RefusedError(f"{path}: version {name} was pruned (refresh --keep): only its ledger, report and document "
                           f"proportions remain")
    return version_dir(path, name)


def version_name(root: str, name: str) -> str:
    """A version as a person types it (``3``, ``000003``, ``base``, ``latest``, or the full name) -> the full name
    of that version of ``root``; one-line refusals for an unknown name or a root whose base is no version."""
    known = versions(root)
    text = str(name).strip()
    if text.lower() == "latest":
        current = latest(root)
        if current is None:
            raise UsageError(f"{root} has no published version (no {LATEST})")
        return current
    if text.lower() in BASE_NAMES:
        first = known[0] if known else None
        if first is None or not first.startswith("000000-"):
            raise UsageError(f"{root} has no version 0: its first refresh predates base versions (the base model "
                             f"is {base_path(root) or 'not recorded'}; read it with --model that path)")
        return first
    if text in known:
        return text
    if text.isdigit():
        text = f"{int(text):06d}"
    matches = [v for v in known if v.startswith(text + "-") or (len(text) > 6 and v.startswith(text))]
    if len(matches) != 1:
        raise UsageError(f"{root} has no version {name!r} (versions: {', '.join(known[-5:]) or 'none'}; a version "
                         f"is named by its number, e.g. 3, by 'base' or by its full name)")
    return matches[0]


def base_path(root: str) -> str | None:
    """The base model's directory as the oldest version recorded it."""
    names = versions(root)
    if not names:
        return None
    meta = storage.load_json(storage.join(version_dir(root, names[0]), "model.json"))
    return stored_path(((meta.get("refresh") or {}).get("parent") or {}).get("base"), root)


def next_version(root: str) -> str:
    """A new version name: one more than the highest number ever used, and the UTC time."""
    numbers = [int(VERSION_NAME.match(v).group(1)) for v in versions(root)]
    return f"{max(numbers, default=0) + 1:06d}-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}"


def set_latest(root: str, version: str) -> None:
    """Point ``LATEST`` at a complete version (one file replaced atomically, or one PUT)."""
    publish.require_complete(version_dir(root, version))
    storage.write_bytes(storage.join(root, LATEST), (version + "\n").encode("utf-8"))


def chain(root: str, start: str | None = None) -> list[str]:
    """The committed versions: ``start`` (default LATEST) and its parents, newest first."""
    out, name = [], start if start is not None else latest(root)
    known = set(versions(root))
    while name is not None and name in known and name not in out:
        out.append(name)
        meta_path = storage.join(version_dir(root, name), "model.json")
        parent = (storage.load_json(meta_path).get("refresh") or {}).get("parent") if storage.exists(meta_path) \
            else None
        name = parent.get("version") if isinstance(parent, dict) else None
    return out


def staging_version(root: str, version: str, token: str) -> str:
    return storage.join(root, VERSIONS, f".staging-{version}-{token}")


def publish_version(root: str, staging: str, version: str) -> str:
    """Move a complete staged version into ``versions/<version>`` and point ``LATEST`` at it."""
    target = version_dir(root, version)
    publish.publish(staging, target)
    publish.step("version-moved")
    set_latest(root, version)
    sync_doc_topics(root)
    return target


def sync_doc_topics(root: str) -> list[str]:
    """Make ``ROOT/doc_topics/`` hold one partition per committed version (and ``version=base``, the base
    model's documents, once the root has a version) and nothing else; returns the partitions added (+) and
    removed (-)."""
    table = storage.join(root, DOC_TOPICS)
    named = latest(root)
    if named is not None and named not in versions(root):
        raise DamagedError(f"{storage.join(root, LATEST)} names the version {named}, which {root} does not have: the "
                           f"model root is damaged (nothing was changed); point {LATEST} at a complete version")
    committed = chain(root)
    if not committed:
        return []                                 # nothing committed: nothing to sync, and nothing to delete
    sources = {v: storage.join(version_dir(root, v), "doc_topics.parquet") for v in committed}
    sources[BASE_PARTITION] = None            # the base model's, checked when it is to be copied
    present = storage.list_dir(table)
    changes = []
    for name in present:
        if name.startswith("."):                  # a copy a killed run did not finish
            storage.delete(storage.join(table, name))
        elif name.startswith("version=") and name[len("version="):] not in sources:
            storage.delete(storage.join(table, name))
            changes.append(f"-{name}")
    for version, source in sources.items():
        name = f"version={version}"
        if version == BASE_PARTITION and name not in present:
            source = base_doc_topics(root, version_dir(root, committed[-1]))
        if name in present or source is None or not storage.exists(source):
            continue
        hidden = storage.join(table, f".{name}.{publish.new_token()}")
        copy = copy_training_rows if version == BASE_PARTITION else storage.copy_tree   # the base: training rows
        copy(source, hidden)
        storage.move(hidden, storage.join(table, name))
        changes.append(f"+{name}")
    return changes


def recover(root: str) -> list[str]:
    """Remove what killed runs left under ``versions/`` (staging folders) and bring the document-topic table in
    line with the chain; returns what changed."""
    removed = []
    for name in storage.list_dir(storage.join(root, VERSIONS)):
        if name.startswith(".staging-") or name.startswith(".tmp-"):
            storage.delete(storage.join(root, VERSIONS, name))
            removed.append(name)
    return removed + [f"{DOC_TOPICS}/{change}" for change in sync_doc_topics(root)]


#: the files a pruned version loses (its ledger, report, vocabulary and document proportions stay; chain: a Gibbs
#: model's kept chain, drivers/engines/gibbs/chain.py)
MODEL_PARTS = ("lambda", "topic_word", "tree_lambda", "tree_concepts", "tree_edge_counts", "chain")


def prune(root: str, keep: int) -> list[str]:
    """Keep the model files of the ``keep`` newest committed versions; older versions lose their model files
    (their ledger, report and document proportions stay: they are the root's history). Versions outside the
    chain (abandoned by a rollback, or left unpublished) older than the oldest kept one are deleted whole.
    Returns the pruned versions."""
    if keep < 1:
        raise UsageError(f"--keep must be at least 1, got {keep}")
    committed = chain(root)
    kept = set(committed[:keep])
    oldest_kept = min(kept) if kept else None
    pruned = []
    for name in versions(root):
        if name in kept or (oldest_kept is not None and name > oldest_kept):
            continue
        directory = version_dir(root, name)
        if name not in committed:
            storage.delete(directory)
            pruned.append(name)
            continue
        marker = publish.read_marker(directory) or {}
        if marker.get("pruned"):
            continue
        for entry in storage.list_dir(directory):
            if entry.split(".", 1)[0] in MODEL_PARTS:
                storage.delete(storage.join(directory, entry))
        publish.write_marker(directory, marker.get("token", publish.new_token()), pruned=True)
        pruned.append(name)
    return pruned


def is_pruned(directory: str) -> bool:
    return bool((publish.read_marker(directory) or {}).get("pruned"))
