"""Build ``sample_data/web_chapters.jsonl.gz`` from the World English Bible.

The World English Bible (WEB) is in the public domain.  Debian ships it as the
SWORD module ``engWEB2015eb`` (package ``sword-text-web``); ``mod2imp`` from
``libsword-utils`` dumps it in SWORD's "imp" format, one ``$$$Book C:V`` key
per verse followed by the verse's OSIS markup::

    apt-get install -y sword-text-web libsword-utils
    python sample_data/make_sample.py            # runs `mod2imp engWEB2015eb`
    python sample_data/make_sample.py --imp web.imp   # or read a saved dump

One JSON line per chapter of the 66 books of the Protestant canon (1189
chapters): ``{"id": "Gen.1", "text": "..."}`` with OSIS book abbreviations and
one verse per line.  Footnotes are dropped, every other element keeps its text
only (canonical psalm titles included).  The output is gzip-compressed with a
fixed timestamp so that re-running the script gives identical bytes.
"""
from __future__ import annotations

import argparse
import gzip
import html
import json
import re
import subprocess
import sys
from pathlib import Path

MODULE = "engWEB2015eb"

#: OSIS abbreviations of the 66 books kept, in canonical order.
BOOKS = (
    "Gen Exod Lev Num Deut Josh Judg Ruth 1Sam 2Sam 1Kgs 2Kgs 1Chr 2Chr Ezra Neh "
    "Esth Job Ps Prov Eccl Song Isa Jer Lam Ezek Dan Hos Joel Amos Obad Jonah Mic "
    "Nah Hab Zeph Hag Zech Mal "
    "Matt Mark Luke John Acts Rom 1Cor 2Cor Gal Eph Phil Col 1Thess 2Thess 1Tim "
    "2Tim Titus Phlm Heb Jas 1Pet 2Pet 1John 2John 3John Jude Rev"
).split()

KEY = re.compile(r"^\$\$\$(?P<book>.+) (?P<chapter>\d+):(?P<verse>\d+)$")
CHAPTER_TAG = re.compile(r'<chapter [^>]*osisID="(?P<osis>[^".]+)\.(?P<chapter>\d+)"')
NOTE = re.compile(r"<note\b.*?</note>", re.DOTALL)
TAG = re.compile(r"<[^>]+>")
SPACES = re.compile(r"\s+")


GLOSSARY = "World English Bible Glossary"


def dump_module(module: str = MODULE) -> str:
    """Return the raw imp dump of a SWORD module (needs ``mod2imp`` on PATH)."""
    result = subprocess.run(["mod2imp", module], check=True, capture_output=True)
    return result.stdout.decode("utf-8")


def parse_imp(imp: str):
    """Yield ``(book_name, chapter, verse, osis_markup)`` for every verse key."""
    key, lines = None, []
    for line in imp.splitlines():
        if line.startswith("$$$"):
            if key is not None:
                yield (*key, "\n".join(lines))
            match = KEY.match(line)
            key = (match["book"], int(match["chapter"]), int(match["verse"])) if match else None
            lines = []
        else:
            lines.append(line)
    if key is not None:
        yield (*key, "\n".join(lines))


def plain_text(markup: str) -> str:
    """OSIS markup -> plain text: footnotes become a space, other tags vanish."""
    text = NOTE.sub(" ", markup)
    text = TAG.sub("", text)
    return SPACES.sub(" ", html.unescape(text)).strip()


def chapters(imp: str) -> list[dict]:
    """Group the verses of the kept books into one ``{"id", "text"}`` per chapter."""
    osis_of_book: dict[str, str] = {}
    verses: dict[tuple[str, int], list[str]] = {}
    for book, chapter, verse, markup in parse_imp(imp):
        if chapter == 0:  # module, testament and book introductions
            continue
        tag = CHAPTER_TAG.search(markup)
        if tag:
            osis_of_book.setdefault(book, tag["osis"])
        text = plain_text(markup).split(GLOSSARY)[0].strip()  # the module appends its glossary to Rev 22:21
        if text:
            verses.setdefault((book, chapter), []).append(text)
    docs = []
    for (book, chapter), lines in verses.items():
        osis = osis_of_book.get(book)
        if osis in BOOKS:
            docs.append({"id": f"{osis}.{chapter}", "text": "\n".join(lines),
                         "_order": (BOOKS.index(osis), chapter)})
    docs.sort(key=lambda d: d.pop("_order"))
    return docs


def write_jsonl_gz(docs: list[dict], path: Path) -> None:
    """Write JSON lines, gzip-compressed with mtime 0 (reproducible bytes)."""
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0,
                                                filename="") as gz:
        for doc in docs:
            gz.write((json.dumps(doc, ensure_ascii=False) + "\n").encode("utf-8"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--imp", type=Path, help="read a saved `mod2imp` dump instead of running it")
    parser.add_argument("--output", type=Path,
                        default=Path(__file__).with_name("web_chapters.jsonl.gz"))
    args = parser.parse_args(argv)
    imp = args.imp.read_text(encoding="utf-8") if args.imp else dump_module()
    docs = chapters(imp)
    write_jsonl_gz(docs, args.output)
    print(f"wrote {len(docs)} chapters to {args.output} "
          f"({args.output.stat().st_size / 1e6:.2f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
