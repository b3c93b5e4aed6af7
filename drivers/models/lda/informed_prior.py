"""Informed priors from user files (thesis §3.3.1): seed word lists or a full sparse prior.

Two kinds of ``--prior`` file:

* **Word lists** naming topics, with LIWC-style prefix patterns (``america*``
  matches every vocabulary term starting with ``america``):

  - JSON: ``{"anger": ["hate", "kill*"], "anxiety": ["worr*", "fear"]}``
  - text: one topic per line, ``anger: hate kill*`` (``#`` starts a comment)
  - a LIWC ``.dic`` dictionary: a ``%``-delimited header of ``number name``
    category lines, then ``word_or_pattern number number ...`` lines

  The listed topics take indices 0, 1, ... in file order; topic k's prior row is
  ``high`` for its words and ``low`` for every other word, the remaining topics
  keep the symmetric ``eta``.

* **A full sparse prior**, Parquet or CSV with columns ``topic`` (an index below K,
  or a name: names take indices in order of first appearance), ``word`` (a term)
  and ``value`` (positive); entries not listed keep the symmetric ``eta``.

Every pattern or word that matches nothing in the vocabulary is reported (count
and list, in the log and in ``model.json``), never silently ignored; an empty
topic list, a topic none of whose words is in the vocabulary, a value that is not
positive and finite, or a topic index beyond K is an error.
"""
from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from drivers import storage
from inference.errors import UsageError
from inference.priors import DirichletPrior

log = logging.getLogger("spark_topics.prior")


class PriorError(UsageError):
    """The prior file is unusable; the message says why."""


@dataclass
class PriorSpec:
    names: list                          # topic names in index order (seeded topics)
    words: dict = field(default_factory=dict)    # name -> [word or pattern*] (word lists)
    entries: pd.DataFrame | None = None  # topic(index), word, value (sparse prior)


# --------------------------------------------------------------------------- reading

def spec_to_json(spec: PriorSpec, high: float, low: float) -> dict:
    """The prior as given (word lists with their patterns, or the sparse entries) and --prior-high/-low: kept
    beside a model (``prior_spec.json``) so a refresh applies it to the words that join the vocabulary."""
    out = {"names": list(spec.names), "high": float(high), "low": float(low)}
    if spec.entries is None:
        out["words"] = {name: list(words) for name, words in spec.words.items()}
    else:
        out["entries"] = {column: spec.entries[column].tolist() for column in ("topic", "word", "value", "named")
                          if column in spec.entries}
    return out


def spec_from_json(data: dict) -> tuple[PriorSpec, float, float]:
    """(spec, high, low) from :func:`spec_to_json`'s output."""
    entries = pd.DataFrame(data["entries"]) if "entries" in data else None
    return PriorSpec(names=list(data["names"]), words=dict(data.get("words") or {}), entries=entries), \
        float(data["high"]), float(data["low"])


def read_prior(path: str) -> PriorSpec:
    lower = path.lower()
    if not storage.exists(path):
        raise PriorError(f"prior file not found: {path}")
    if lower.endswith((".parquet", ".csv")) or storage.is_dir(path):
        return _read_sparse(path)
    try:
        text = storage.read_bytes(path).decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise PriorError(f"{path} is not UTF-8 text ({exc.reason} at byte {exc.start}): save it as UTF-8") from None
    if lower.endswith(".json"):
        return _word_lists(_parse_json(text, path), path)
    if lower.endswith(".dic") or text.lstrip().startswith("%"):
        return _word_lists(_parse_liwc(text, path), path)
    return _word_lists(_parse_lines(text, path), path)


def _parse_json(text: str, path: str) -> dict:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise PriorError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(data, dict) or not all(isinstance(v, list) for v in data.values()):
        raise PriorError(f'{path}: expected an object of word lists, e.g. {{"anger": ["hate", "kill*"]}}')
    return {str(k): [str(w) for w in v] for k, v in data.items()}


def _parse_lines(text: str, path: str) -> dict:
    lists = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name, sep, rest = line.partition(":") if ":" in line else line.partition("\t")
        if not sep or not name.strip():
            raise PriorError(f"{path}:{number}: expected 'topic: word word*', got {line!r}")
        if name.strip() in lists:
            raise PriorError(f"{path}:{number}: topic {name.strip()!r} is listed twice")
        lists[name.strip()] = rest.replace(",", " ").split()
    return lists


def _parse_liwc(text: str, path: str) -> dict:
    parts = text.split("%")
    if len(parts) < 3:
        raise PriorError(f"{path}: a LIWC dictionary needs a %-delimited category header")
    categories = {}
    for line in parts[1].splitlines():
        if line.strip():
            number, _, name = line.strip().partition("\t") if "\t" in line else line.strip().partition(" ")
            categories[number.strip()] = name.strip()
    lists = {name: [] for name in categories.values()}
    for line in "%".join(parts[2:]).splitlines():
        fields = line.split()
        if len(fields) < 2:
            continue
        for number in fields[1:]:
            if number not in categories:
                raise PriorError(f"{path}: word {fields[0]!r} refers to unknown category {number}")
            lists[categories[number]].append(fields[0])
    return lists


def _word_lists(lists: dict, path: str) -> PriorSpec:
    if not lists:
        raise PriorError(f"{path}: no topics in the prior file")
    for name, words in lists.items():
        if not words:
            raise PriorError(f"{path}: topic {name!r} has an empty word list")
    return PriorSpec(names=list(lists), words=lists)


def _read_sparse(path: str) -> PriorSpec:
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    filesystem, p = storage.resolve(path)
    table = (pacsv.read_csv(filesystem.open_input_stream(p)) if path.lower().endswith(".csv")
             else pq.read_table(p, filesystem=filesystem))
    frame = table.to_pandas()
    missing = [c for c in ("topic", "word", "value") if c not in frame.columns]
    if missing:
        raise PriorError(f"{path}: a sparse prior needs columns topic, word, value; missing {', '.join(missing)}")
    if frame.empty:
        raise PriorError(f"{path}: the sparse prior has no entries")
    values = pd.to_numeric(frame["value"], errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isfinite(values) | (values <= 0)
    if bad.any():
        rows = frame.loc[bad].head(5).to_dict("records")
        raise PriorError(f"{path}: {int(bad.sum())} prior value(s) are not positive finite numbers, e.g. {rows}")
    topics = frame["topic"]
    as_int = pd.to_numeric(topics, errors="coerce")
    if as_int.notna().all() and not (as_int == as_int.round()).all():
        fractional = topics[as_int != as_int.round()].iloc[0]
        raise PriorError(f"{path}: topic {fractional} is not a topic index (whole numbers 0..K-1) nor a name; "
                         f"name topics with words, e.g. 'anger'")
    if as_int.notna().all():
        index = as_int.astype(np.int64).to_numpy()
        if index.min() < 0:
            raise PriorError(f"{path}: negative topic index {int(index.min())}")
        names = [f"topic {k}" for k in range(int(index.max()) + 1)]
        named = False
    else:
        names = list(dict.fromkeys(str(t) for t in topics))
        index = np.array([names.index(str(t)) for t in topics], dtype=np.int64)
        named = True
    entries = pd.DataFrame({"topic": index, "word": frame["word"].astype(str).to_numpy(), "value": values})
    return PriorSpec(names=names if named else [], entries=entries.assign(named=named))


# --------------------------------------------------------------------------- matching

def match_pattern(pattern: str, sorted_terms: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Vocabulary ids matched by a word (exact) or a LIWC prefix pattern ``prefix*``
    (``sorted_terms`` = terms[order], ``order`` the argsort of the vocabulary terms)."""
    pattern = pattern.strip().lower()
    if pattern.endswith("*"):
        prefix = pattern.rstrip("*")
        lo = np.searchsorted(sorted_terms, prefix, side="left")
        hi = np.searchsorted(sorted_terms, prefix + "\U0010ffff", side="left")
        return np.sort(order[lo:hi])
    i = np.searchsorted(sorted_terms, pattern)
    if i < len(sorted_terms) and sorted_terms[i] == pattern:
        return order[i:i + 1]
    return np.zeros(0, dtype=np.int64)


def build_prior(spec: PriorSpec, vocab: pd.DataFrame, num_topics: int, eta: float,
                high: float = 10.0, low: float = 0.01) -> tuple[DirichletPrior, list, dict]:
    """(prior, topic names (K), report) for a vocabulary (``term``, ``id`` sorted by id)."""
    for name, value in (("--eta", eta), ("--prior-high", high), ("--prior-low", low)):
        if not np.isfinite(value) or value <= 0:
            raise PriorError(f"{name} must be a positive number, got {value}")
    terms = vocab["term"].astype(str).to_numpy()
    order = np.argsort(terms, kind="stable")
    sorted_terms = terms[order]
    V = len(terms)
    overrides, missing, matched = {}, {}, {}
    if spec.entries is None:  # word lists
        if len(spec.names) > num_topics:
            raise PriorError(f"the prior names {len(spec.names)} topics but --topics is {num_topics}")
        for k, name in enumerate(spec.names):
            ids = [match_pattern(w, sorted_terms, order) for w in spec.words[name]]
            gone = [w for w, i in zip(spec.words[name], ids) if i.size == 0]
            if gone:
                missing[name] = gone
            hit = np.unique(np.concatenate(ids)) if ids else np.zeros(0, np.int64)
            if hit.size == 0:
                raise PriorError(f"none of the words of topic {name!r} is in the vocabulary: {spec.words[name]}")
            row_ids = np.arange(V)
            values = np.full(V, low)
            values[hit] = high
            overrides[k] = (row_ids, values)
            matched[name] = int(hit.size)
        names = list(spec.names) + [f"topic {k}" for k in range(len(spec.names), num_topics)]
    else:
        entries = spec.entries
        if int(entries["topic"].max()) >= num_topics:
            raise PriorError(f"the prior refers to topic index {int(entries['topic'].max())}, "
                             f"but --topics is {num_topics} (indices 0..{num_topics - 1})")
        ids = np.array([match_pattern(w, sorted_terms, order)[:1].tolist() or [-1]
                        for w in entries["word"]]).ravel()
        unknown = entries.loc[ids < 0]
        for topic, group in unknown.groupby("topic"):
            missing[_name(spec, int(topic))] = group["word"].tolist()
        known = entries.assign(id=ids).loc[ids >= 0]
        for topic in sorted(set(entries["topic"]) - set(known["topic"])):
            words = entries.loc[entries["topic"] == topic, "word"].tolist()
            raise PriorError(f"none of the words of topic {_name(spec, int(topic))!r} is in the vocabulary: {words}")
        for topic, group in known.groupby("topic", sort=True):
            if group["id"].duplicated().any():
                raise PriorError(f"the prior lists a word twice for topic {_name(spec, int(topic))!r}")
            overrides[int(topic)] = (group["id"].to_numpy(), group["value"].to_numpy())
            matched[_name(spec, int(topic))] = int(len(group))
        names = [spec.names[k] if spec.names and k < len(spec.names) else f"topic {k}" for k in range(num_topics)]
    n_missing = sum(len(v) for v in missing.values())
    if n_missing:
        log.warning("prior: %d word(s)/pattern(s) are not in the vocabulary: %s", n_missing,
                    "; ".join(f"{t}: {' '.join(ws)}" for t, ws in missing.items()))
    report = {"kind": "word_lists" if spec.entries is None else "sparse", "high": high, "low": low, "eta": eta,
              "topics": {n: {"index": names.index(n), "words_matched": m} for n, m in matched.items()},
              "missing_count": n_missing, "missing": missing}
    prior = DirichletPrior(np.full(V, eta), overrides, summary=report)
    return prior, names, report


def _name(spec: PriorSpec, k: int) -> str:
    return spec.names[k] if spec.names and k < len(spec.names) else f"topic {k}"
