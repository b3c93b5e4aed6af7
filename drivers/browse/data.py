"""The data of a topic browser site, from any family's model directory (or a model root's LATEST): one summary (the
model card, the intertopic map, every topic's share and label) and one small record per topic (its words under
relevance, top documents with snippets, related topics, its family views), so the page loads a topic only when it
is opened.

The numbers are :mod:`inference.topic_map`'s (pyLDAvis' definitions); the family views are
:mod:`drivers.browse.family_views`'."""
from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from drivers import storage
from drivers.browse import corpus_view, family_views
from drivers.store import model_root, model_store
from inference import topic_map
from inference.errors import DamagedError

log = logging.getLogger("spark_topics.browse")

#: pyLDAvis' default of R, the words listed per topic, and Sievert & Shirley's suggested lambda
WORDS_PER_TOPIC = 30
DEFAULT_LAMBDA = 0.6
COHERENCE_WORDS = 10
#: a topic's most probable words (per language) that the page's filter box searches
FILTER_WORDS = 10
#: model.json entries shown on the card as they are (scalars); the traces are drawn
TRACE_KEYS = (("elbo_trace", "elbo", "ELBO"), ("trace", "loglik", "log p(w | z)"))


@dataclass
class WordPanel:
    """One language's words of every topic (a monolingual model has one panel, named "")."""
    language: str
    phi: np.ndarray           # K x V_L, rows sum to 1
    terms: np.ndarray         # V_L terms
    offset: int = 0           # the panel's first global word id
    p_w: np.ndarray = None    # the marginal word distribution: shares @ phi (pyLDAvis' term frequencies)


@dataclass
class SiteData:
    summary: dict
    topics: list = field(default_factory=list)   # one record per topic, in topic order


def word_panels(model) -> list[WordPanel]:
    phi = np.asarray(model.topic_word(), dtype=np.float64)
    terms = model.vocab["term"].to_numpy().astype(str)
    if not model.languages:
        return [WordPanel("", phi, terms)]
    panels, start = [], 0
    for language in model.languages:
        stop = start + int(model.meta["vocab_sizes"][language])
        part = phi[:, start:stop]
        panels.append(WordPanel(language, part / part.sum(axis=1, keepdims=True), terms[start:stop], start))
        start = stop
    return panels


def _theta_batches(model_dir: str, batch_rows: int = 65536):
    """``(doc ids, theta (B x K))`` of ``doc_topics.parquet``, batch by batch."""
    import pyarrow.dataset as ds

    path = storage.join(model_dir, "doc_topics.parquet")
    if not storage.exists(path):
        raise DamagedError(f"{model_dir} has no doc_topics.parquet: the model directory is incomplete; train the "
                           f"model again")
    filesystem, p = storage.resolve(path)
    for batch in ds.dataset(p, filesystem=filesystem, format="parquet").to_batches(columns=["doc_id", "theta"],
                                                                                    batch_size=batch_rows):
        if batch.num_rows == 0:
            continue
        theta = batch.column(1)
        values = np.asarray(theta.flatten().to_numpy(zero_copy_only=False), dtype=np.float64)
        yield np.asarray(batch.column(0).to_pylist(), dtype=object), values.reshape(batch.num_rows, -1)


def document_topics(model_dir: str, num_topics: int, lengths: pd.Series | None, top_docs: int,
                    mean_length: float = 1.0):
    """(topic frequencies (K,): sum_d n_d theta_dk, each topic's top documents [(id, proportion)], documents) in one
    pass over ``doc_topics.parquet``; n_d the document's tokens when the corpus gives them, else ``mean_length``."""
    weighted = np.zeros(num_topics)
    count = [0]
    fill = float(lengths.mean()) if lengths is not None and len(lengths) else mean_length

    def batches():
        for ids, theta in _theta_batches(model_dir):
            if theta.shape[1] != num_topics:
                raise DamagedError(f"{model_dir}: doc_topics.parquet has {theta.shape[1]} topics, model.json "
                                   f"{num_topics}: the model directory is damaged; train the model again")
            w = np.full(len(ids), fill) if lengths is None else \
                lengths.reindex(ids).fillna(fill).to_numpy(np.float64)
            weighted[:] += w @ theta
            count[0] += len(ids)
            yield ids, theta

    best = topic_map.top_documents(batches(), num_topics, top_docs)
    return weighted, best, count[0]


def model_card(model, directory: str, root: str | None, documents: int) -> dict:
    meta = model.meta
    card = {"model": meta.get("model"), "directory": storage.absolute(directory), "topics": model.num_topics,
            "vocabulary": int(len(model.vocab)), "languages": model.languages, "documents": documents}
    if root is not None:
        card["root"] = storage.absolute(root)
        card["version"] = model_root.latest(root)
    alpha = meta.get("alpha")
    if isinstance(alpha, list) and alpha:
        a = np.asarray(alpha, dtype=np.float64)
        card["alpha"] = {"sum": float(a.sum()), "min": float(a.min()), "max": float(a.max())}
    elif alpha is not None:
        card["alpha"] = alpha
    card["settings"] = {k: v for k, v in meta.items()
                        if isinstance(v, (int, float, str, bool)) and k not in card and v is not None}
    for key in ("data", "code", "hyper", "tree", "refresh"):
        if isinstance(meta.get(key), dict):
            card["settings"].update({f"{key}.{k}": v for k, v in meta[key].items()
                                     if isinstance(v, (int, float, str, bool)) and v is not None})
    card["heldout"] = {k: v for k, v in meta.items() if "heldout" in k or "perplexity" in k}
    for key, value, name in TRACE_KEYS:
        trace = meta.get(key)
        if isinstance(trace, list) and trace and isinstance(trace[0], dict) and value in trace[0]:
            card["trace"] = {"name": meta.get("objective") or name, "values": [t.get(value) for t in trace],
                             "seconds": [t.get("seconds") for t in trace]}
            break
    return card


@dataclass
class ModelData:
    """A model as the browser reads it: its word panels, topic frequencies and top documents."""
    model: object
    directory: str
    root: str | None
    panels: list
    corpora: dict             # panel language -> its training corpus (None when gone)
    topic_freq: np.ndarray    # sum_d n_d theta_dk
    best_docs: list
    documents: int

    @property
    def shares(self) -> np.ndarray:
        total = self.topic_freq.sum()
        return self.topic_freq / total if total > 0 else np.full(len(self.topic_freq), 1.0 / len(self.topic_freq))

    def joint_phi(self) -> np.ndarray:
        """K x (sum of V_L): the panels side by side, rows summing to 1."""
        return np.hstack([p.phi for p in self.panels]) / len(self.panels)


def read_model(path: str, version: str | None = None, top_docs: int = 10) -> ModelData:
    root = path if model_root.is_root(path) else None
    directory = model_store.resolve(path, version)
    model = model_store.load_model(directory)
    panels = word_panels(model)
    corpora = {p.language: corpus_view.corpus_directory(model.meta, p.language or None) for p in panels}
    lengths = None
    for corpus in corpora.values():
        if corpus is not None:
            part = corpus_view.document_lengths(corpus)
            lengths = part if lengths is None else lengths.add(part, fill_value=0)
    log.info("reading the document-topic proportions of %s", directory)
    data_meta = model.meta.get("data") or {}
    mean_length = data_meta["tokens"] / data_meta["documents"] if data_meta.get("tokens") and \
        data_meta.get("documents") else 1.0              # the corpus is gone: model.json's tokens per document
    topic_freq, best_docs, documents = document_topics(directory, model.num_topics, lengths, top_docs, mean_length)
    data = ModelData(model, directory, root, panels, corpora, topic_freq, best_docs, documents)
    for panel in panels:
        panel.p_w = data.shares @ panel.phi
    return data


def collect(path: str, version: str | None = None, top_docs: int = 10, related: int = 5,
            words: int = WORDS_PER_TOPIC, coherence: bool = True) -> SiteData:
    """Everything the site shows of the model at ``path`` (a model directory, or a model root's ``version``,
    default LATEST)."""
    md = read_model(path, version, top_docs)
    model, directory, root, panels, corpora = md.model, md.directory, md.root, md.panels, md.corpora
    shares, best_docs, documents, K = md.shares, md.best_docs, md.documents, model.num_topics
    joint = md.joint_phi()
    log.info("Jensen-Shannon distances between %d topics and their principal coordinates", K)
    distances, below = topic_map.topic_divergences(joint)
    if below:
        log.info("the intertopic map from the words above each topic's floor (every distance at most %.2g below "
                 "the exact one)", below)
    coords = topic_map.pcoa(distances)
    nearest = topic_map.nearest_topics(distances, related)
    coherences = {}
    if coherence:
        for panel in panels:
            if corpora[panel.language] is not None:
                log.info("NPMI coherence of the topics' top %d words%s", COHERENCE_WORDS,
                         f" ({panel.language})" if panel.language else "")
                top = np.argsort(-panel.phi, axis=1, kind="stable")[:, :COHERENCE_WORDS]
                coherences[panel.language] = corpus_view.npmi_per_topic(top, corpora[panel.language])
    views = family_views.collect(model, directory, root, [d for docs in best_docs for d, _ in docs])
    card = model_card(model, directory, root, documents)
    mean = {lang: float(np.nanmean(c)) for lang, c in coherences.items()}
    if mean:
        card["coherence"] = {"measure": f"document NPMI of the top {COHERENCE_WORDS} words over the training corpus",
                             "mean": mean}
    salient = []
    for panel in panels:
        s = topic_map.saliency(panel.phi, shares, panel.p_w)
        order = np.argsort(-s, kind="stable")[:words]
        salient.append({"language": panel.language, "terms": panel.terms[order].tolist(),
                        "saliency": np.round(s[order], 6).tolist()})
    tops = [[p.terms[np.argsort(-p.phi[k], kind="stable")[:FILTER_WORDS]].tolist() for p in panels] for k in range(K)]
    labels = [" ".join(top[0][:3]) for top in tops]
    summary = {"card": card, "lambda": DEFAULT_LAMBDA, "words": words, "views": views.kinds(),
               "salient": salient, "topics": [
                   {"k": k, "share": float(shares[k]), "x": float(coords[k, 0]), "y": float(coords[k, 1]),
                    "label": labels[k], "top": " ".join(w for words_ in tops[k] for w in words_),
                    "names": model.topic_names()[k] if model.meta.get("topic_names") else None,
                    "coherence": {lang: _finite(c[k]) for lang, c in coherences.items()}}
                   for k in range(K)]}
    snippet_texts = {}
    for panel in panels:
        corpus = corpora[panel.language]
        if corpus is not None:
            ids = sorted({d for docs in best_docs for d, _ in docs})
            snippet_texts[panel.language] = corpus_view.snippets(corpus, ids, panel.terms)
    data = SiteData(summary)
    for k in range(K):
        data.topics.append(topic_record(k, panels, best_docs[k], snippet_texts, nearest[k], distances[k], views))
    return data


def topic_record(k: int, panels: list, docs: list, snippet_texts: dict, nearest, distances, views) -> dict:
    record = {"k": k, "panels": [], "docs": [], "related": [[int(j), round(float(distances[j]), 5)] for j in nearest]}
    for panel in panels:
        ids = topic_map.relevance_candidates(panel.phi[k:k + 1], panel.p_w, WORDS_PER_TOPIC)[0]
        row = panel.phi[k, ids]
        with np.errstate(divide="ignore"):
            log_phi = np.log(row)
        lift = topic_map.log_lift(row[None, :], panel.p_w[ids])[0]
        record["panels"].append({"language": panel.language, "terms": panel.terms[ids].tolist(),
                                 "log_phi": np.round(log_phi, 5).tolist(), "log_lift": np.round(lift, 5).tolist(),
                                 **views.words(k, panel, ids)})
    for doc_id, proportion in docs:
        entry = {"id": str(doc_id), "p": round(float(proportion), 5)}
        texts = {lang: t[doc_id] for lang, t in snippet_texts.items() if doc_id in t}
        if texts:
            entry["snippet"] = texts
        record["docs"].append(entry)
    record.update(views.topic(k, [str(d) for d, _ in docs]))
    return record


def _finite(x: float):
    return None if x is None or not np.isfinite(x) else round(float(x), 4)
