"""Reference corpora for the NPMI of ``bench_infvoc.py`` that are not the stream itself (the thesis counts PMI on
Wikipedia; issue 30): text a Debian package ships about the stream's subject.

* ``python-news``: the paragraphs of the Python 3.11 documentation's reST sources as ``python3.11-doc`` ships them
  (``/usr/share/doc/python3.11/html/_sources``, the library, language and C API references, tutorial, HOWTOs,
  FAQ; PSF licence), without ``whatsnew/`` (its ``changelog`` is the stream's NEWS file). One document per
  paragraph (blank-line separated) of at least 5 words. The files' digest (SHA-256 of the paths and contents, in
  path order) is printed, so two runs can be compared.
"""
from __future__ import annotations

import hashlib
import re
from pathlib import Path

PYTHON_DOCS = Path("/usr/share/doc/python3.11/html/_sources")


def python_docs(root: Path = PYTHON_DOCS) -> tuple[list[str], str]:
    """(the paragraphs, the digest of the files read)."""
    if not root.is_dir():
        raise SystemExit(f"{root} is missing: `apt-get install python3.11-doc` (Debian 12) brings it")
    files = sorted(p for p in root.rglob("*.txt") if "whatsnew" not in p.relative_to(root).parts)
    h = hashlib.sha256()
    paragraphs = []
    for path in files:
        data = path.read_bytes()
        h.update(str(path.relative_to(root)).encode() + b"\0" + data)
        for block in re.split(r"\n\s*\n", data.decode("utf-8", errors="replace")):
            text = " ".join(block.split())
            if len(text.split()) >= 5:
                paragraphs.append(text)
    return paragraphs, h.hexdigest()


REFERENCES = {"python-news": python_docs, "python-news-joined": python_docs}
