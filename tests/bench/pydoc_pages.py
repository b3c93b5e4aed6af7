"""Every page of the Python 3.11 documentation (Debian's ``python3-doc``, PSF licence) as one document of its
``<p>`` prose in page order (``pre``/``code``/scripts left out), for the chapter-5 benchmark of the cluster models
(README, "Cluster-based topic model"): library, language reference, C API, how-tos, tutorial, what's new, so
documents fall into groups. Pages of fewer than ``--min-words`` words are left out; a page is cut to its first
``--max-words`` words (the thesis cuts papers to 180 tokens after stop words).

    python tests/bench/pydoc_pages.py /tmp/pydoc.jsonl
"""
from __future__ import annotations

import argparse
import json
import re
from html.parser import HTMLParser
from pathlib import Path

ROOT = Path("/usr/share/doc/python3.11/html")
SKIP = ("pre", "code", "script", "style")


class Paragraphs(HTMLParser):
    """The text of a page's ``<p>`` elements, code left out."""

    def __init__(self):
        super().__init__()
        self.open, self.skip, self.text, self.found = 0, 0, [], []

    def handle_starttag(self, tag, attrs):
        if tag == "p":
            self.open, self.text = self.open + 1, []
        elif tag in SKIP:
            self.skip += 1

    def handle_endtag(self, tag):
        if tag in SKIP and self.skip:
            self.skip -= 1
        elif tag == "p" and self.open:
            self.open -= 1
            self.found.append(re.sub(r"\s+", " ", "".join(self.text)).strip())

    def handle_data(self, data):
        if self.open and not self.skip:
            self.text.append(data)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("output")
    ap.add_argument("--min-words", type=int, default=150)
    ap.add_argument("--max-words", type=int, default=600)
    args = ap.parse_args(argv)
    if not ROOT.is_dir():
        raise SystemExit(f"no {ROOT}: install Debian's python3-doc (apt-get install python3-doc)")
    written = 0
    with open(args.output, "w", encoding="utf-8") as out:
        for page in sorted(ROOT.rglob("*.html")):
            rel = page.relative_to(ROOT)
            if rel.parts[0].startswith("_") or rel.name in ("genindex.html", "py-modindex.html", "search.html"):
                continue
            parser = Paragraphs()
            parser.feed(page.read_text(encoding="utf-8", errors="replace"))
            words = " ".join(parser.found).split()
            if len(words) >= args.min_words:
                out.write(json.dumps({"id": str(rel.with_suffix("")), "text": " ".join(words[:args.max_words])}) + "\n")
                written += 1
    print(f"{written} pages -> {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
