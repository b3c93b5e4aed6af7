"""What ``spark-topics evaluate --json FILE`` writes: the figures the job prints, as one JSON document for scripts
and schedulers, the same keys for every model and method.

    format        "spark-topics-evaluate/1"
    model         the model's settings from its model.json: directory, name, inference, topics, vocab_size,
                  languages, seed, iterations (Gibbs: burn_in, lag, samples), hyperparameters, settings
    corpus, reference, test_documents
    method        how it was scored: name ("document-completion": part of every document observed, the rest
                  scored; "every-word": every word fitted and scored; or the model's own protocol), its settings
                  (observed fraction, sweeps, samples, E-step tolerance, seed)
    perplexity, loglik, documents (scored), tokens {"scored": ...}; variational: corpus_documents,
                  skipped_short_documents
    bits_per_word (--method left-to-right, method {"name": "left-to-right", particles, resample, seed, protocol,
                  token_order}; also perplexity = 2^bits_per_word, loglik, bits_per_word_importance and
                  loglik_importance (the mean of the particles' products), tokens {"scored", "skipped_oov"},
                  seconds, seconds_per_token; no NPMI)
    heldout_elbo_per_token (variational models)
    npmi, npmi_per_topic, npmi_top_words, npmi_reference_documents
    per_language, retrieval, cnpmi (an aligned test corpus: per_language holds the figures above per language)
    standard_coherence (gensim's c_npmi, c_v, u_mass, topic diversity: drivers/evaluation/standard_coherence.py),
                  stability (with --stability-of), in_sample (the scored corpus is the training corpus)

A value that is not finite is written as null (JSON has no NaN). Vectors of more than :data:`MAX_VECTOR` values in
the hyperparameters (a bigram model's base measure over the vocabulary) are written as their length and sum.
"""
from __future__ import annotations

import json
import math

from drivers import storage
from drivers.store import model_store

FORMAT = "spark-topics-evaluate/1"
MAX_VECTOR = 1000
#: the variational estimator folds in this fraction of every test document's tokens (drivers.evaluation.heldout)
VARIATIONAL_OBSERVED = 0.5


def report(metrics: dict) -> dict:
    """The report of ``metrics`` as a family's ``evaluate`` returns them."""
    if metrics.get("left_to_right"):
        body = dict(model=model_settings(metrics["model"]), corpus=metrics["corpus"],
                    test_documents=metrics["test_documents"], **_left_to_right(metrics["left_to_right"]))
    elif metrics.get("aligned"):
        body = {"corpus": metrics["corpus"], "languages": metrics["languages"],
                "models": {lang: model_settings(d) for lang, d in metrics["models"].items()},
                "per_language": {lang: _document_completion(m) for lang, m in metrics["per_language"].items()},
                "retrieval": metrics["retrieval"], "cnpmi": metrics.get("cnpmi") or {}}
    elif metrics.get("gibbs"):
        body = dict(model=model_settings(metrics["model"]), corpus=metrics["corpus"],
                    reference=metrics["reference"], test_documents=metrics["test_documents"],
                    **_gibbs_heldout(metrics))
    else:
        body = dict(model=model_settings(metrics["model"]), corpus=metrics["corpus"],
                    reference=metrics["reference"], test_documents="all", **_document_completion(metrics))
    extra = {k: metrics[k] for k in ("standard_coherence", "stability", "in_sample") if k in metrics}
    return _json_safe({"format": FORMAT, **body, **extra})


def write(path: str, metrics: dict) -> dict:
    """The report of ``metrics`` written to ``path`` atomically (a temporary name, then a rename); returns it."""
    document = report(metrics)
    storage.write_bytes(path, (json.dumps(document, indent=2, allow_nan=False) + "\n").encode("utf-8"))
    return document


def model_settings(directory: str) -> dict:
    meta = model_store.read_meta(directory)
    settings = meta.get("settings") or {}
    hyper = meta.get("hyper") or {k: meta[k] for k in ("alpha", "eta") if k in meta}
    fields = {"directory": directory, "name": meta.get("model"),
              "inference": meta.get("inference") or settings.get("inference"),
              "topics": meta.get("topics"), "vocab_size": meta.get("vocab_size"), "languages": meta.get("languages"),
              "seed": meta.get("seed"), "iterations": meta.get("iterations"), "burn_in": meta.get("burn_in"),
              "lag": meta.get("lag"), "samples": meta.get("samples_taken"),
              "hyperparameters": {k: _compact(v) for k, v in hyper.items()}, "settings": settings or None}
    return {k: v for k, v in fields.items() if v is not None}


def _document_completion(m: dict) -> dict:
    c = m["completion"]
    return {"method": {"name": "document-completion", "observed": VARIATIONAL_OBSERVED, "seed": m["seed"],
                       "estep": m["estep"]},
            "perplexity": m["perplexity"], "loglik": c["loglik"], "documents": c["documents"],
            "corpus_documents": m["documents"], "tokens": {"scored": c["heldout_tokens"]},
            "skipped_short_documents": c["skipped_short_documents"],
            "heldout_elbo_per_token": m["heldout_elbo_per_token"], **_npmi(m)}


def _gibbs_heldout(m: dict) -> dict:
    h = m["heldout"]
    name = "every-word" if h.get("observed") is None else "document-completion"
    method = {"name": name, "protocol": h.get("protocol") or "thesis eq 5.10: the model's sampler, topics fixed",
              "observed": h.get("observed"), "iterations": h["iterations"], "burn_in": h.get("burn_in"),
              "lag": h.get("lag"), "samples": h["samples"], "seed": h.get("seed", m["seed"])}
    return {"method": method, "perplexity": m["perplexity"], "loglik": h.get("loglik"),
            "documents": h["documents"], "tokens": {"scored": h["tokens"]}, **_npmi(m)}


def _left_to_right(r: dict) -> dict:
    method = {"name": "left-to-right", "particles": r["particles"], "resample": r["resample"], "seed": r["seed"],
              "protocol": r["protocol"], "token_order": r["token_order"]}
    return {"method": method, "bits_per_word": r["bits_per_word"], "perplexity": r["perplexity"],
            "loglik": r["loglik"], "bits_per_word_importance": r["bits_per_word_importance"],
            "loglik_importance": r["loglik_importance"], "documents": r["documents"],
            "tokens": {"scored": r["tokens"], "skipped_oov": r["skipped_oov"]},
            "seconds": r["seconds"], "seconds_per_token": r["seconds_per_token"]}


def _npmi(m: dict) -> dict:
    s = m["npmi_settings"]
    return {"npmi": m["npmi"], "npmi_per_topic": m["npmi_per_topic"], "npmi_top_words": s["top_words"],
            "npmi_reference_documents": s["reference_documents"]}


def _compact(value):
    if isinstance(value, (list, tuple)) and len(value) > MAX_VECTOR:
        return {"length": len(value), "sum": float(sum(value))}
    return value


def _json_safe(value):
    """Plain JSON values: numpy numbers as Python numbers, non-finite floats as None."""
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if hasattr(value, "tolist"):                       # numpy scalars and arrays
        return _json_safe(value.tolist())
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    return value
