"""The infinite-vocabulary LDA model (Zhai & Boyd-Graber 2013; thesis chapter 7): its state and its directory.

A model directory (``train --vocabulary infinite``, or a model root's version written by ``refresh --vocabulary
infinite``) holds, besides the usual ``model.json``, ``topics.txt``, ``doc_topics.parquet`` and ``tokenizer.json``:

    tos.parquet          topic, position, term, nu1, nu2, rank, since: every topic's truncation ordered set in TOS
                         order (the Beta parameters of the sticks, the ranking score R (7.8), the minibatch at which
                         the word entered)
    base_measure.json    G_0 over strings: the character n-gram counts and the length multinomial zeta
    vocab.parquet        term, id: the base vocabulary (the training corpus'); ``topics`` marks every other word
    dropped.npy          (K, BITS/8) uint8: each topic's Bloom filter of the words dropped from its TOS (only with
                         ``--dropped-words bloom``; :mod:`inference.infvoc.dropped`)

No pickles: Parquet and JSON only.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd

from drivers import storage
from drivers.store import model_store
from inference.errors import DamagedError
from inference.infvoc.base_measure import CharNgramBase
from inference.infvoc.dropped import empty_filter
from inference.infvoc.tos import OnlineSettings, TopicSet

MODEL_NAME = "lda-infvoc"
TOS_FILE = "tos.parquet"
BASE_MEASURE_FILE = "base_measure.json"
DROPPED_FILE = "dropped.npy"
#: the files of this model beyond :data:`drivers.store.model_store.MODEL_FILES`
OWN_FILES = (TOS_FILE, BASE_MEASURE_FILE, DROPPED_FILE)
#: settings a model.json saved before them lacks, at the values those models ran with (the discount: session 27)
LEGACY_SETTINGS = {"discount": 0.0}
#: ``topics`` marks a word the base vocabulary does not have with this
NEW_MARK = "+"


def is_model_file(name: str) -> bool:
    return name in OWN_FILES or model_store.is_model_file(name)


def is_infinite(meta: dict) -> bool:
    return meta.get("model") == MODEL_NAME


@dataclass
class InfVocModel:
    """The state of online inference: the TOS of every topic, G_0, alpha^theta, the settings and the counters."""
    sets: list                      # K TopicSets
    base: CharNgramBase
    alpha: np.ndarray               # (K,) alpha^theta
    settings: OnlineSettings
    known: pd.Index                 # the base vocabulary
    minibatches: int = 0            # minibatches seen (i of epsilon_i)
    documents: int = 0              # documents seen
    burn_in: int = 5
    samples: int = 10
    seed: int = 0
    meta: dict = field(default_factory=dict)

    @property
    def num_topics(self) -> int:
        return len(self.sets)

    def expected_weights(self, k: int) -> np.ndarray:
        """E_q[beta_kt] = E[b_kt] prod_{s<t} E[1 - b_ks] of topic k's TOS words (in TOS order)."""
        ts = self.sets[k]
        if not len(ts):
            return np.zeros(0)
        total = ts.nu1 + ts.nu2
        rest = np.cumprod(ts.nu2 / total)
        return ts.nu1 / total * np.concatenate([[1.0], rest[:-1]])

    def top_words(self, n: int) -> list:
        """Each topic's ``n`` words of highest E_q[beta], as (word, probability, new) triples."""
        out = []
        for k, ts in enumerate(self.sets):
            weights = self.expected_weights(k)
            order = np.argsort(-weights, kind="stable")[:n]
            new = self.known.get_indexer(ts.terms[order]) < 0
            out.append([(str(ts.terms[i]), float(weights[i]), bool(m)) for i, m in zip(order, new)])
        return out

    def format_topics(self, n: int = 10, weights: bool = False) -> str:
        lines = []
        for k, words in enumerate(self.top_words(n)):
            shown = [(w + NEW_MARK if new else w) + (f" {p:.4f}" if weights else "") for w, p, new in words]
            lines.append(f"{'topic ' + str(k):>10}: " + (", " if weights else " ").join(shown))
        lines.append(f"({NEW_MARK}: a word that entered after the base vocabulary; TOS sizes "
                     f"{min(len(s) for s in self.sets)}-{max(len(s) for s in self.sets)} words)")
        return "\n".join(lines)

    def new_words(self) -> list:
        """The words of any topic's TOS that the base vocabulary does not have, sorted."""
        words = set()
        for ts in self.sets:
            words.update(str(w) for w, m in zip(ts.terms, self.known.get_indexer(ts.terms) < 0) if m)
        return sorted(words)

    # --- files ---------------------------------------------------------------------------------------------
    def save(self, directory: str, extra_meta: dict | None = None) -> dict:
        """Write tos.parquet, base_measure.json, vocab.parquet and model.json (the rest is the caller's)."""
        storage.makedirs(directory)
        rows = [pd.DataFrame({"topic": np.full(len(ts), k, dtype=np.int32),
                              "position": np.arange(1, len(ts) + 1, dtype=np.int32),
                              "term": ts.terms.astype(str), "nu1": ts.nu1, "nu2": ts.nu2, "rank": ts.rank,
                              "since": ts.since.astype(np.int64)}) for k, ts in enumerate(self.sets)]
        model_store.write_parquet(storage.join(directory, TOS_FILE), pd.concat(rows, ignore_index=True))
        storage.save_json(storage.join(directory, BASE_MEASURE_FILE), self.base.to_json())
        if any(ts.dropped is not None for ts in self.sets):
            filters = np.stack([ts.dropped if ts.dropped is not None else empty_filter() for ts in self.sets])
            storage.save_npy(storage.join(directory, DROPPED_FILE), filters)
        model_store.write_parquet(storage.join(directory, "vocab.parquet"),
                                  pd.DataFrame({"term": np.asarray(self.known, dtype=str),
                                                "id": np.arange(len(self.known), dtype=np.int32)}))
        meta = dict(self.meta)
        meta.update(model=MODEL_NAME, vocabulary="infinite", inference="hybrid", num_topics=self.num_topics,
                    topics=self.num_topics,
                    alpha=self.alpha.tolist(), settings=asdict(self.settings), minibatches=self.minibatches,
                    documents=self.documents, hybrid_burn_in=self.burn_in, hybrid_samples=self.samples,
                    seed=self.seed, tos_sizes=[len(s) for s in self.sets], vocab_size=len(self.known),
                    code_version=model_store.CODE_VERSION, **(extra_meta or {}))
        storage.save_json(storage.join(directory, "model.json"), meta)
        self.meta = meta
        return meta

    @classmethod
    def load(cls, directory: str) -> "InfVocModel":
        meta = storage.load_json(storage.join(directory, "model.json"))
        if not is_infinite(meta):
            raise DamagedError(f"{directory} is not an infinite-vocabulary model (model.json: {meta.get('model')})")
        try:
            table = model_store.read_parquet(storage.join(directory, TOS_FILE))
            base = CharNgramBase.from_json(storage.load_json(storage.join(directory, BASE_MEASURE_FILE)))
            vocab = model_store.read_parquet(storage.join(directory, "vocab.parquet"))
            filters = storage.load_npy(storage.join(directory, DROPPED_FILE)) \
                if storage.exists(storage.join(directory, DROPPED_FILE)) else None
        except (OSError, KeyError, ValueError) as exc:
            raise DamagedError(f"{directory}: an infinite-vocabulary model file is missing or damaged ({exc})") from None
        K = int(meta["num_topics"])
        if filters is not None and (filters.dtype != np.uint8 or filters.shape != (K, empty_filter().shape[0])):
            raise DamagedError(f"{directory}: {DROPPED_FILE} is not {K} filters of dropped words ({filters.dtype}, "
                               f"{filters.shape})")
        sets = []
        table = table.sort_values(["topic", "position"])
        for k in range(K):
            rows = table[table["topic"] == k]
            values = [rows[c].to_numpy() for c in ("nu1", "nu2", "rank")]
            if any(not np.all(np.isfinite(v)) for v in values) or np.any(values[0] <= 0) or np.any(values[1] <= 0):
                raise DamagedError(f"{directory}: {TOS_FILE} has non-finite or non-positive parameters in topic {k}")
            sets.append(TopicSet(rows["term"].to_numpy(dtype=object), *[v.astype(np.float64) for v in values],
                                 rows["since"].to_numpy(dtype=np.int64), None if filters is None else filters[k]))
        settings = OnlineSettings(**{**LEGACY_SETTINGS, **meta["settings"]})
        return cls(sets, base, np.asarray(meta["alpha"], dtype=np.float64), settings,
                   pd.Index(vocab.sort_values("id")["term"].astype(str).to_numpy(), dtype=object),
                   int(meta["minibatches"]), int(meta["documents"]), int(meta["hybrid_burn_in"]),
                   int(meta["hybrid_samples"]), int(meta["seed"]), meta)
