"""The pinned streams of ``bench_infvoc.py`` (issue 30): real text sorted by time, with a label per document.

* ``python-news``: the entries of CPython's ``Misc/NEWS`` as Debian's ``python3.11`` package ships it
  (``/usr/share/doc/python3.11/NEWS.gz``, the 3.11.2 release notes of every release from 3.5.0a1, 2015-02, to
  3.11.2, 2023-02; PSF licence). One document per entry (``- gh-issue-NNN: text``), dated by its release, labelled
  by its section (Library, Core and Builtins, Build, Windows, IDLE, Documentation, Tests, C API, Security,
  Tools/Demos, macOS: what part of Python the change is about, a label with topic signal as the thesis'
  newsgroups). Pinned by the file's SHA-256 (the same in every 3.11.2-6+deb12uN; a different file is refused).
* ``debian-changelogs``: the entries of the Debian changelogs (``/usr/share/doc/PKG/changelog.Debian.gz``) of the
  1,005 doc folders listed in ``infvoc_debian_packages.txt`` (this machine's on 2026-11-27), entries dated before
  2026-11-28 only, so packages installed or upgraded later change nothing; a listed folder that is missing is named
  (``apt-get install`` brings it back; upgrades only add entries after the cut). Label: the package's Debian
  section (``dpkg-query``). The corpus' digest (SHA-256 of the ids and texts) is printed so two runs can be
  compared: 14,862 entries, digest 12eca7cc8546b163 on 2026-11-28. python-news: digest 2db3351c5a514626.
* ``python-news-joined``: python-news' entries at 20 newsgroups-like lengths (:func:`python_news_joined`): the
  entries of one section of one release, in the file's order, joined into documents of at least
  :data:`JOINED_TOKENS` tokens; dated by the release, labelled by the section.
* ``git-relnotes`` (session 25, pre-registered: :func:`git_relnotes`): the bulleted entries of git's release notes
  as Debian's ``git`` package ships them (``/usr/share/doc/git/RelNotes/*.txt``; GPL-2), the 74 feature releases
  only (1.5.0 .. 1.8.5, then X.Y.0 from 1.9.0 to 2.39.0; a maintenance release's fixes reappear in the next
  feature release's "Fixes since"), in version order, which for feature releases is time order (2007-02 ..
  2022-12). One document per entry (``* text`` and its continuation lines; a nested ``- item`` is an entry of
  its own), the ``(merge <hash> <topic> later to maint)`` lines removed. Label: the part of the notes the entry
  is in, **fixes** ("Fixes since ..."), **features** ("UI, Workflows & Features") or **internal** ("Performance,
  Internal Implementation, ..."); other parts (1.x's undivided "Updates since", compatibility notes, foreign
  interfaces) unlabelled. Pinned by the stream's digest (:data:`GIT_DIGEST`; git 1:2.39.5-0+deb12u3).
"""
from __future__ import annotations

import email.utils
import glob
import gzip
import hashlib
import os
import re
import subprocess
from pathlib import Path

NEWS = "/usr/share/doc/python3.11/NEWS.gz"
NEWS_SHA256 = "840dff6ebaeb2cffab25b0e9c30b7f3f912d6a452148be78892de80e81afb938"
PACKAGES = Path(__file__).with_name("infvoc_debian_packages.txt")
CHANGELOG_CUT = "20261128T000000"
RELNOTES = "/usr/share/doc/git/RelNotes"
GIT_DIGEST = "cfdd7234a8c8f7cd"

HEADER = re.compile(r"^([a-z0-9][a-z0-9+.-]*) \(([^)]+)\) ")
TRAILER = re.compile(r"^ -- .*?>\s\s?(.+)$")
RELEASE = re.compile(r"^What's New in Python (.+?)\??$")
RELEASE_DATE = re.compile(r"^\*?Release date: *(\d{4}-\d\d-\d\d)\*?$")


class CorpusError(SystemExit):
    """The pinned corpus is not on this machine as pinned (one line)."""


def python_news(path: str = NEWS) -> list[dict]:
    """Rows (id: release date and the entry's place in time, text, label: its section, date), sorted by id."""
    if not os.path.exists(path):
        raise CorpusError(f"{path} is missing: `apt-get install python3.11` (Debian 12) brings it")
    data = open(path, "rb").read()
    if hashlib.sha256(data).hexdigest() != NEWS_SHA256:
        raise CorpusError(f"{path} is not the pinned file (SHA-256 {NEWS_SHA256[:12]}..., python3.11 3.11.2-6+deb12u*)")
    lines = gzip.decompress(data).decode("utf-8").splitlines()
    entries, date, section, current = [], None, None, None
    for i, line in enumerate(lines):
        following = lines[i + 1] if i + 1 < len(lines) else ""
        if current is not None and not (line.startswith("  ") or not line.strip()):
            entries.append(current)
            current = None
        if RELEASE.match(line) and following.startswith("==="):
            date, section = None, None
        elif RELEASE_DATE.match(line.strip()):
            date = RELEASE_DATE.match(line.strip()).group(1)
        elif line.strip() and re.fullmatch(r"-{3,}", following) and not line.startswith("-"):
            section = line.strip()
        elif line.startswith("- ") and date and section:
            current = {"date": date, "label": section, "text": line[2:].strip()}
        elif current is not None and line.strip():
            current["text"] += " " + line.strip()
    if current is not None:
        entries.append(current)
    # the file runs newest first: its last entry is the oldest
    ordered = sorted(reversed(entries), key=lambda e: e["date"])
    return [{"id": f"{e['date'].replace('-', '')}-{n:05d}", "text": e["text"], "label": e["label"],
             "package": e["label"]} for n, e in enumerate(ordered)]


#: python-news-joined: a document closes once it holds this many tokens (the bench's tokenizer: runs of letters)
JOINED_TOKENS = 150
WORD = re.compile(r"[^\W\d_]+")


def python_news_joined(path: str = NEWS, least: int = JOINED_TOKENS) -> list[dict]:
    """python-news at the lengths of 20 newsgroups' posts (the thesis' corpus: ~10x python-news' 13.7 tokens).
    Within each (release, section), entries in the stream's order are appended to a document until it holds
    ``least`` tokens (runs of letters, stop words included), then the next document starts; the group's last
    document, if shorter, joins the one before it (a group shorter than ``least`` in all is one document). The
    documents keep the release's date and the section as label, ids in time order (the first entry's place)."""
    groups = {}
    for row in python_news(path):
        groups.setdefault((row["id"][:8], row["label"]), []).append(row)
    documents = []
    for (date, label), rows in groups.items():
        parts, tokens = [[]], 0
        for row in rows:
            if tokens >= least:
                parts.append([])
                tokens = 0
            parts[-1].append(row)
            tokens += len(WORD.findall(row["text"]))
        if len(parts) > 1 and tokens < least:
            parts[-2].extend(parts.pop())
        documents += [{"id": f"{date}-{part[0]['id'][9:]}", "text": " ".join(r["text"] for r in part),
                       "label": label, "package": label, "entries": len(part)} for part in parts]
    return sorted(documents, key=lambda r: r["id"])


def debian_changelogs(packages_file: Path = PACKAGES, cut: str = CHANGELOG_CUT) -> list[dict]:
    """One row per changelog entry of the listed doc folders dated before ``cut``: id (date, package, version:
    sorts by time), text, package (the doc folder), label (its Debian section, None if dpkg does not know it)."""
    folders = [line.strip() for line in packages_file.read_text().splitlines() if line.strip()]
    missing = [f for f in folders if not os.path.exists(f"/usr/share/doc/{f}/changelog.Debian.gz")]
    if missing:
        raise CorpusError(f"{len(missing)} pinned changelogs are missing ({', '.join(missing[:5])}...): "
                          f"apt-get install them")
    section = _sections()
    seen, rows = set(), []
    for folder in folders:
        path = f"/usr/share/doc/{folder}/changelog.Debian.gz"
        try:
            lines = gzip.open(path, "rt", encoding="utf-8", errors="replace").read().splitlines()
        except (OSError, EOFError):
            continue
        head, body = None, []
        for line in lines:
            match = HEADER.match(line)
            if match:
                head, body = match.groups(), []
                continue
            trailer = TRAILER.match(line)
            if trailer and head:
                try:
                    when = email.utils.parsedate_to_datetime(trailer.group(1).strip())
                except (TypeError, ValueError):
                    head = None
                    continue
                stamp = f"{when.astimezone(email.utils.datetime.timezone.utc):%Y%m%dT%H%M%S}"
                if head not in seen and body and stamp < cut:
                    seen.add(head)
                    rows.append({"id": f"{stamp}-{head[0]}-{head[1]}", "text": " ".join(body), "package": folder,
                                 "label": section.get(folder)})
                head = None
            elif head:
                text = line.strip()
                if text:
                    body.append(text)
    return sorted(rows, key=lambda r: r["id"])


#: a git release-notes heading -> the entry's label (the first pattern found; a heading matching none: unlabelled)
GIT_PARTS = ((re.compile(r"^Fixes since", re.I), "fixes"), (re.compile(r"^UI, Workflows", re.I), "features"),
             (re.compile(r"^Performance", re.I), "internal"))
GIT_SUBHEADING = re.compile(r"^(UI, Workflows|Performance|Foreign interface)", re.I)
BULLET = re.compile(r"^ {0,3}[*-] +(\S.*)$")
UNDERLINE = re.compile(r"[-=]{3,}")
MERGE_NOTE = re.compile(r"\(merge [0-9a-f]{6,} [^)]*\)\.?")


def git_feature_release(version: tuple) -> bool:
    """1.5.0 .. 1.8.5 (three numbers; four: maintenance), then X.Y.0 (git's numbering from 1.9.0 on)."""
    if version[:1] == (1,) and version[1] <= 8:
        return len(version) == 3
    return len(version) == 3 and version[2] == 0


def git_entries(lines: list[str]) -> list[tuple]:
    """(label, text) of every bulleted entry of one release's notes, in order."""
    entries, label, current = [], None, None
    for i, line in enumerate(lines):
        following = lines[i + 1].strip() if i + 1 < len(lines) else ""
        if UNDERLINE.fullmatch(line.strip()):
            continue
        bullet = BULLET.match(line)
        heading = (bool(line) and not line[0].isspace() and not bullet
                   and (UNDERLINE.fullmatch(following) is not None or GIT_SUBHEADING.match(line) is not None))
        if current is not None and (heading or bullet or (line.strip() and not line[0].isspace())):
            entries.append(current)
            current = None
        if heading:
            label = next((name for pattern, name in GIT_PARTS if pattern.search(line)), None)
        elif bullet:
            current = (label, bullet.group(1))
        elif current is not None and line.strip():
            current = (current[0], current[1] + " " + line.strip())
    if current is not None:
        entries.append(current)
    return [(label, MERGE_NOTE.sub("", text).strip()) for label, text in entries if MERGE_NOTE.sub("", text).strip()]


def git_relnotes(folder: str = RELNOTES, pinned: str | None = GIT_DIGEST) -> list[dict]:
    """Rows (id: v<release>-<place in the stream>, text, label: fixes / features / internal / None, package: the
    release) of git's feature releases' notes, in version order (module docstring)."""
    if not os.path.isdir(folder):
        raise CorpusError(f"{folder} is missing: `apt-get install git` (Debian 12) brings it")
    versions = sorted(tuple(int(x) for x in name[:-4].split(".")) for name in os.listdir(folder)
                      if re.fullmatch(r"\d+(\.\d+)+\.txt", name))
    rows = []
    for version in filter(git_feature_release, versions):
        name = ".".join(map(str, version))
        lines = open(f"{folder}/{name}.txt", encoding="utf-8", errors="replace").read().splitlines()
        release = f"v{version[0]}.{version[1]:02d}.{version[2]:02d}"
        rows += [{"id": f"{release}-{len(rows) + n:05d}", "text": text, "label": label, "package": release}
                 for n, (label, text) in enumerate(git_entries(lines))]
    if pinned and digest(rows)[:16] != pinned:
        raise CorpusError(f"{folder} does not give the pinned stream (digest {pinned}, this machine's "
                          f"{digest(rows)[:16]}; git 1:2.39.5-0+deb12u3)")
    return rows


def _sections() -> dict:
    """package -> Debian section of the installed packages."""
    out = subprocess.run(["dpkg-query", "-W", "-f=${Package}\t${Section}\n"], check=True, capture_output=True,
                         text=True).stdout
    return {p.split(":")[0]: s.split("/")[-1] for p, s in (line.split("\t") for line in out.splitlines() if "\t" in line)}


def digest(rows) -> str:
    """SHA-256 of the stream (ids and texts in order): equal digests, equal corpora."""
    h = hashlib.sha256()
    for r in rows:
        h.update(r["id"].encode() + b"\0" + r["text"].encode() + b"\n")
    return h.hexdigest()


def installed_doc_folders() -> list[str]:
    """The doc folders with a Debian changelog on this machine (how ``infvoc_debian_packages.txt`` was made)."""
    return sorted(p.split("/")[-2] for p in glob.glob("/usr/share/doc/*/changelog.Debian.gz"))


CORPORA = {"python-news": python_news, "python-news-joined": python_news_joined,
           "debian-changelogs": debian_changelogs, "git-relnotes": git_relnotes}
