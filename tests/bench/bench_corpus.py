"""The benchmark corpus: short real English documents from Debian's SWORD packages, built on demand.

Documents (about 100k in the pool, 4.6M words before stop words):

* every verse of two Bible translations, the World English Bible (``engWEB2015eb``,
  package ``sword-text-web``) and the King James Version (``engKJV2006eb``,
  ``sword-text-kjv``);
* every paragraph of three commentaries keyed by verse: Spurgeon's Treasury of
  David (``TDavid``, ``sword-comm-tdavid``), Matthew Henry's Concise Commentary
  (``MHCC``, ``sword-comm-mhcc``) and the Scofield Reference Notes (``Scofield``,
  ``sword-comm-scofield``).

``mod2imp`` (``libsword-utils``) dumps a module; the markup is turned into text
by ``sample_data/make_sample.py``. Nothing is committed: the pool and the
prepared corpora are cached under ``out/bench/`` (git-ignored). A benchmark of N
documents takes the first N of the pool in the order of a seeded hash of their
ids; the last ``heldout`` fraction of them is the test corpus, prepared with the
training vocabulary (``prepare --vocab``).
"""
from __future__ import annotations

import gzip
import hashlib
import json
import logging
import os
import re
import shutil
import subprocess
from pathlib import Path

from bench_common import CACHE  # noqa: E402  (first: puts the project on sys.path)
from make_sample import parse_imp, plain_text  # noqa: E402  (the OSIS -> text rules of the sample data)

log = logging.getLogger("spark_topics.bench")

#: SWORD module -> (Debian package, kind): verses are documents, commentary paragraphs are documents
MODULES = {
    "engWEB2015eb": ("sword-text-web", "verse"),
    "engKJV2006eb": ("sword-text-kjv", "verse"),
    "TDavid": ("sword-comm-tdavid", "paragraph"),
    "MHCC": ("sword-comm-mhcc", "paragraph"),
    "Scofield": ("sword-comm-scofield", "paragraph"),
}
PARAGRAPH = re.compile(r'<div [^>]*type="x-p"/>')
MIN_WORDS = 5


def ensure_modules() -> None:
    """Install ``mod2imp`` and the SWORD modules with apt-get when they are missing."""
    mods = Path("/usr/share/sword/mods.d")
    installed = {p.name.lower() for p in mods.glob("*.conf")} if mods.is_dir() else set()
    missing = [pkg for module, (pkg, _) in MODULES.items() if f"{module.lower()}.conf" not in installed]
    if shutil.which("mod2imp") is None:
        missing.append("libsword-utils")
    if not missing:
        return
    log.info("installing %s", " ".join(missing))
    try:
        subprocess.run(["apt-get", "update", "-qq"], check=True)
        subprocess.run(["apt-get", "install", "-y", "-qq", *missing], check=True,
                       env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
    except (OSError, subprocess.CalledProcessError) as exc:
        raise SystemExit(f"the benchmark corpus needs the Debian packages {' '.join(missing)}: "
                         f"install them (apt-get install {' '.join(missing)}) ({exc})") from None


def module_documents(module: str, kind: str):
    """Yield ``(doc_id, text)``: one per verse, or one per commentary paragraph, of a SWORD module."""
    imp = subprocess.run(["mod2imp", module], check=True, capture_output=True).stdout.decode("utf-8", "replace")
    for book, chapter, verse, markup in parse_imp(imp):
        if chapter == 0:
            continue
        pieces = [markup] if kind == "verse" else PARAGRAPH.split(markup)
        for i, piece in enumerate(pieces):
            text = plain_text(piece)
            if len(text.split()) >= MIN_WORDS:
                yield f"{module}:{book} {chapter}:{verse}#{i}", text


def build_pool(path: Path) -> int:
    """Write every distinct document of :data:`MODULES` to ``path`` (JSON lines, gzip); returns the count."""
    ensure_modules()
    seen, n = set(), 0
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with gzip.open(tmp, "wt", encoding="utf-8") as out:
        for module, (_, kind) in MODULES.items():
            for doc_id, text in module_documents(module, kind):
                digest = hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()
                if digest in seen:       # commentaries repeat an entry under every verse it covers
                    continue
                seen.add(digest)
                out.write(json.dumps({"id": doc_id, "text": text}, ensure_ascii=False) + "\n")
                n += 1
    tmp.rename(path)
    log.info("benchmark pool: %d documents in %s", n, path)
    return n


def rank(doc_id: str, seed: int) -> bytes:
    return hashlib.blake2b(f"{seed}\x00{doc_id}".encode("utf-8"), digest_size=8).digest()


def kind_of(doc_id: str) -> str:
    """``verse`` or ``paragraph``: the kind of the module a pool document comes from."""
    return MODULES[doc_id.split(":", 1)[0]][1]


def select(pool: Path, n_docs: int, heldout: float, seed: int, kind: str | None = None):
    """The first ``n_docs`` pool documents (of ``kind`` only, when given: ``verse`` gives short documents,
    ``paragraph`` longer ones) by seeded hash order: (train, test) lists of JSON lines."""
    with gzip.open(pool, "rt", encoding="utf-8") as f:
        lines = f.readlines()
    if kind is not None:
        lines = [line for line in lines if kind_of(json.loads(line)["id"]) == kind]
    if n_docs > len(lines):
        raise SystemExit(f"--docs {n_docs}: the pool has only {len(lines)} documents"
                         + (f" of kind {kind}" if kind else ""))
    chosen = sorted(lines, key=lambda line: rank(json.loads(line)["id"], seed))[:n_docs]
    n_test = round(heldout * n_docs)
    return chosen[:n_docs - n_test], chosen[n_docs - n_test:]


def ensure_corpus(spark, n_docs: int, heldout: float = 0.1, seed: int = 0, min_df: int = 2,
                  max_df: float = 0.5, cache: Path = CACHE, kind: str | None = None) -> tuple[str, str]:
    """Prepared (train, test) corpus directories of the benchmark, built and cached when missing (``kind``:
    only verses, or only commentary paragraphs; default both)."""
    from drivers.preparation.corpus import prepare_corpus

    pool = cache / "pool.jsonl.gz"
    if not pool.exists():
        build_pool(pool)
    root = cache / (f"corpus-{n_docs}-h{heldout:g}-s{seed}-df{min_df}-{max_df:g}"
                    + (f"-{kind}s" if kind else ""))
    train_dir, test_dir = root / "train", root / "test"
    if (train_dir / "corpus.json").exists() and (test_dir / "corpus.json").exists():
        return str(train_dir), str(test_dir)
    train_lines, test_lines = select(pool, n_docs, heldout, seed, kind)
    root.mkdir(parents=True, exist_ok=True)
    for name, lines in (("train", train_lines), ("test", test_lines)):
        (root / f"{name}.jsonl").write_text("".join(lines), encoding="utf-8")
    prepare_corpus(spark, str(root / "train.jsonl"), str(train_dir), min_df=min_df, max_df=max_df, overwrite=True)
    prepare_corpus(spark, str(root / "test.jsonl"), str(test_dir), vocab=str(train_dir / "vocab.parquet"),
                   overwrite=True)
    return str(train_dir), str(test_dir)


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="build the benchmark corpus under out/bench/")
    parser.add_argument("--docs", type=int, default=50000)
    parser.add_argument("--heldout", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--kind", choices=("verse", "paragraph"), default=None,
                        help="only Bible verses (short documents) or only commentary paragraphs (longer ones)")
    args = parser.parse_args()
    from bench_common import bench_session
    spark = bench_session("bench corpus")
    for directory in ensure_corpus(spark, args.docs, args.heldout, args.seed, kind=args.kind):
        print(directory, json.loads((Path(directory) / "corpus.json").read_text())["documents"])
