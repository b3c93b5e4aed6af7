"""``browse --format pyldavis``: pyLDAvis' prepared data (``PreparedData.to_dict()`` of ``pyLDAvis.prepare``, with
its defaults R = 30, lambda_step = 0.01, PCoA of Jensen-Shannon divergences, topics sorted by share, numbered from
1) as ``pyldavis.json``, computed here with :mod:`inference.topic_map` (pyLDAvis is not a dependency). Load it in
Python with ``pyLDAvis.PreparedData`` or hand it to LDAvis' JavaScript (``new LDAvis("#vis", data)``).

pyLDAvis' own page needs its JavaScript and d3, which pyLDAvis' ``save_html`` links from a CDN; the page is only
written (``pyldavis.html``, the scripts inlined so it opens offline) when pyLDAvis is installed and ships them.
A polylingual model's languages are laid side by side (terms ``lang:term``, each row divided by the number of
languages), as the map of the site does."""
from __future__ import annotations

import json
import logging

import numpy as np

from drivers import storage
from drivers.browse.data import read_model
from inference import topic_map

log = logging.getLogger("spark_topics.browse")

R = 30
LAMBDA_STEP = 0.01


def prepared_data(phi: np.ndarray, topic_freq: np.ndarray, vocab: np.ndarray, R: int = R,
                  lambda_step: float = LAMBDA_STEP) -> dict:
    """pyLDAvis' ``prepare(...).to_dict()`` from the topics (K x V, rows sum to 1) and the topic frequencies
    sum_d n_d theta_dk (pyLDAvis' ``topic_freq``); term frequencies are the model's, sum_k phi_kw topic_freq_k, as
    pyLDAvis computes them."""
    phi, topic_freq, vocab = np.asarray(phi, np.float64), np.asarray(topic_freq, np.float64), np.asarray(vocab)
    K, V = phi.shape
    R = min(R, V)
    order = np.argsort(-topic_freq, kind="stable")              # pyLDAvis: sort_values(ascending=False)
    phi, topic_freq = phi[order], topic_freq[order]
    proportion = topic_freq / topic_freq.sum()
    term_topic_freq = phi * topic_freq[:, None]
    term_frequency = term_topic_freq.sum(axis=0)
    term_proportion = term_frequency / term_frequency.sum()
    saliency = topic_map.saliency(phi, proportion, term_proportion)
    default = np.argsort(-saliency, kind="stable")[:R]
    tinfo = {"Term": vocab[default].tolist(), "Freq": np.floor(term_frequency[default]).tolist(),
             "Total": np.floor(term_frequency[default]).tolist(), "Category": ["Default"] * R,
             "logprob": list(range(R, 0, -1)), "loglift": list(range(R, 0, -1))}
    with np.errstate(divide="ignore"):
        log_phi = np.log(phi)
    lift = topic_map.log_lift(phi, term_proportion)
    lambdas = np.arange(0, 1 + lambda_step, lambda_step)
    term_ix = set(default.tolist())
    for new_id in range(K):
        chosen = []
        for lam in lambdas:
            score = topic_map.relevance(log_phi[new_id], lift[new_id], float(lam))
            top = np.argsort(-score, kind="stable")[:R]
            chosen.extend(w for w in top.tolist() if w not in chosen)
        ids = np.asarray(chosen)
        term_ix.update(chosen)
        tinfo["Term"] += vocab[ids].tolist()
        tinfo["Freq"] += term_topic_freq[new_id, ids].tolist()
        tinfo["Total"] += term_frequency[ids].tolist()
        tinfo["Category"] += [f"Topic{new_id + 1}"] * len(ids)
        tinfo["logprob"] += np.round(log_phi[new_id, ids], 4).tolist()
        tinfo["loglift"] += np.round(lift[new_id, ids], 4).tolist()
    token = {"Topic": [], "Freq": [], "Term": []}
    rows = []
    for w in sorted(term_ix):
        for new_id in range(K):
            f = term_topic_freq[new_id, w]
            if f >= 0.5:
                rows.append((str(vocab[w]), new_id + 1, float(np.round(f)) / term_frequency[w]))
    for term, topic, freq in sorted(rows, key=lambda r: (r[0], r[1])):
        token["Topic"].append(topic)
        token["Freq"].append(freq)
        token["Term"].append(term)
    coords = topic_map.pcoa(topic_map.js_divergences(phi))
    return {"mdsDat": {"x": coords[:, 0].tolist(), "y": coords[:, 1].tolist(), "topics": list(range(1, K + 1)),
                       "cluster": [1] * K, "Freq": (proportion * 100).tolist()},
            "tinfo": tinfo, "token.table": token, "R": R, "lambda.step": lambda_step,
            "plot.opts": {"xlab": "PC1", "ylab": "PC2"}, "topic.order": (order + 1).tolist()}


def write(path: str, output: str, version: str | None = None) -> list[str]:
    md = read_model(path, version)
    vocab = np.concatenate([np.char.add(f"{p.language}:", p.terms.astype(str)) if p.language else p.terms
                            for p in md.panels])
    data = prepared_data(md.joint_phi(), md.topic_freq, vocab)
    storage.write_bytes(storage.join(output, "pyldavis.json"), json.dumps(data).encode("utf-8"))
    written = ["pyldavis.json"]
    page = _pyldavis_page(data)
    if page is not None:
        storage.write_bytes(storage.join(output, "pyldavis.html"), page.encode("utf-8"))
        written.append("pyldavis.html")
    else:
        log.warning("pyLDAvis is not installed (or ships no local copy of its scripts): wrote its prepared data "
                    "pyldavis.json only")
    return written


def _pyldavis_page(data: dict) -> str | None:
    """pyLDAvis' page with its own d3 and LDAvis scripts inlined (no network), when pyLDAvis is installed."""
    try:
        import pyLDAvis
        from pyLDAvis import urls
    except ImportError:
        return None
    from pathlib import Path

    scripts = {}
    for name in ("D3_LOCAL", "LDAVIS_LOCAL", "LDAVIS_CSS_LOCAL"):
        local = getattr(urls, name, None)
        if not local or not Path(local).exists():
            return None
        scripts[name] = Path(local).read_text(encoding="utf-8")
    prepared = pyLDAvis.PreparedData  # noqa: F841  (the installed pyLDAvis reads this format)
    blob = json.dumps(data).replace("</", "<\\/")
    return ("<!DOCTYPE html><html><head><meta charset='utf-8'><title>pyLDAvis</title>"
            f"<style>{scripts['LDAVIS_CSS_LOCAL']}</style></head><body><div id='ldavis'></div>"
            f"<script>{scripts['D3_LOCAL']}</script><script>{scripts['LDAVIS_LOCAL']}</script>"
            f"<script>new LDAvis('#ldavis', {blob});</script></body></html>")
