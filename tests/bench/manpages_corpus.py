"""The English manual pages installed under /usr/share/man (Debian's ``manpages`` and ``manpages-dev`` give sections
2-7, the Linux man-pages project; the other installed packages add the rest), sections 1, 2, 3, 4, 5, 7 and 8 (user
commands, system calls, library functions, devices, file formats, overviews, administration), one document per page
file, for the chapter-5 benchmark of the cluster models (README, "Chapter 5 on real text"): the sections are
sub-field clusters like those of the thesis' NIPS papers. Symbolic links (aliases) and the Google Cloud SDK's
generated ``gcloud*`` pages (17,000 near-copies of one template) are left out. The troff source is read directly (no ``man``/``groff``, so the text does not depend on their
versions): comment lines, ``.TH`` and no-fill blocks (``.nf`` ... ``.fi``: synopses and code) are left out, the
arguments of font and heading macros kept, escapes dropped. Pages that only include another (``.so``) are skipped.

    apt-get install manpages manpages-dev
    python tests/bench/manpages_corpus.py /tmp/manpages.jsonl
    python tests/bench/manpages_corpus.py --composition MODEL_DIR   # a trained model's clusters by section
"""
from __future__ import annotations

import argparse
import gzip
import json
import re
from collections import Counter
from pathlib import Path

ROOT = Path("/usr/share/man")
SECTIONS = ("1", "2", "3", "4", "5", "7", "8")
SKIP_PREFIX = "gcloud"
KEEP_ARGS = {"B", "I", "BR", "BI", "IB", "IR", "RB", "RI", "SH", "SS", "SM", "SB", "UR", "MT", "TP", "IP", "TQ"}
ESCAPE = re.compile(r"\\f(\[[^]]*\]|\(..|.)|\\\*(\[[^]]*\]|\(..|.)|\\\((..)|\\\[[^]]*\]|\\[&|^%:e\-\\ ]|\\s[-+]?\d+|\\.")


def page_text(source: str) -> str:
    """The prose of one page's troff source (see the module docstring)."""
    out, nofill = [], False
    for line in source.splitlines():
        if line.startswith(('.\\"', "'\\\"", '.\\\\"')) or line.startswith(".TH"):
            continue
        if line.startswith((".", "'")):
            parts = line[1:].split(None, 1)
            macro = parts[0] if parts else ""
            if macro == "nf" or macro == "EX":
                nofill = True
            elif macro in ("fi", "EE"):
                nofill = False
            elif macro in KEEP_ARGS and len(parts) > 1 and not nofill:
                out.append(parts[1].replace('"', " "))
            continue
        if not nofill:
            out.append(line)
    return re.sub(r"\s+", " ", ESCAPE.sub(" ", " ".join(out))).strip()


def package_pages() -> list[Path]:
    """The page files of the chosen sections (no links, no ``gcloud*``), sorted."""
    return sorted(f for s in SECTIONS for f in (ROOT / f"man{s}").glob("*.gz")
                  if f.is_file() and not f.is_symlink() and not f.name.startswith(SKIP_PREFIX))


def composition(model_dir: str) -> None:
    """Print every cluster of a trained cluster model (``doc_clusters.parquet``; training documents, largest first)
    with its documents' sections (the ids' ``S/`` prefix)."""
    import pyarrow.dataset as ds

    table = ds.dataset(str(Path(model_dir) / "doc_clusters.parquet"), format="parquet").to_table()
    rows = [r for r in table.to_pylist() if not r.get("heldout")]
    by_cluster: dict[int, Counter] = {}
    for r in rows:
        by_cluster.setdefault(r["cluster"], Counter())[r["doc_id"].split("/", 1)[0]] += 1
    for c, sections in sorted(by_cluster.items(), key=lambda item: -sum(item[1].values())):
        print(f"cluster {c}: {sum(sections.values())} pages, sections "
              + ", ".join(f"{s}: {n}" for s, n in sorted(sections.items())))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("output", nargs="?")
    ap.add_argument("--composition", metavar="MODEL_DIR")
    args = ap.parse_args(argv)
    if args.composition:
        composition(args.composition)
        return 0
    if not args.output:
        ap.error("the output file is required")
    written = 0
    with open(args.output, "w", encoding="utf-8") as out:
        for page in package_pages():
            source = gzip.decompress(page.read_bytes()).decode("utf-8", errors="replace")
            if source.lstrip().startswith(".so "):
                continue
            section = page.parent.name[3:]
            out.write(json.dumps({"id": f"{section}/{page.name[:-3]}", "section": section,
                                  "text": page_text(source)}) + "\n")
            written += 1
    print(f"{written} pages -> {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
