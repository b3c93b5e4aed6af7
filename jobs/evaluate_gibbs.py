"""``spark-topics evaluate`` for Gibbs models (lda-gibbs, stm, seqlda, adatm).

Held-out perplexity with the thesis' estimator (:mod:`inference.gibbs.heldout`;
the same for every Gibbs model), and NPMI coherence of the top words as for the
variational models. The test documents are:

* the held-out documents of the training corpus when ``--corpus`` is the corpus
  the model was trained on (same data version) and it was trained with
  ``--heldout-fraction``: the same hash split of the document ids;
* otherwise every document of ``--corpus`` (prepared with the model's
  vocabulary: ``prepare --vocab MODEL_DIR/vocab.parquet``, and with
  ``--segments`` for the structured models).
"""
from __future__ import annotations

from drivers import storage
from inference.gibbs.heldout import HeldoutSchedule
from jobs import model_store


def is_gibbs_model(model_dir: str) -> bool:
    from jobs.train_gibbs import REGISTRY

    path = storage.join(model_dir, "model.json")
    return storage.exists(path) and storage.load_json(path).get("model") in REGISTRY


def evaluate(spark, model_dir: str, corpus_dir: str, reference_dir: str | None = None, top_words: int = 10,
             seed: int = 0, partitions: int | None = None, iterations: int | None = None,
             samples: int | None = None, observed: float | None | str = "model") -> dict:
    from jobs.corpus import load_corpus
    from jobs.evaluate import coherence, reference_word_ids
    from jobs.infer import require_model_vocabulary
    from inference.heldout import top_word_ids
    from jobs.segments import load_segmented_corpus
    from jobs.train_gibbs import NEEDS_SEGMENTS, open_trained, score_heldout

    saved, model = open_trained(model_dir)
    meta = saved.meta
    topic_word = saved.lambda_
    K = topic_word.shape[0]
    data = meta.get("data") or {}
    fraction = float(data.get("heldout_fraction") or 0.0)
    corpus_meta_path = storage.join(corpus_dir, "corpus.json")
    same_corpus = fraction > 0 and storage.exists(corpus_meta_path) and \
        model_store.data_version(storage.load_json(corpus_meta_path)) == data.get("version")
    test = load_segmented_corpus(spark, corpus_dir, partitions, heldout_fraction=fraction if same_corpus else 0.0,
                                 split="test" if same_corpus else "all",
                                 require_segments=meta["model"] in NEEDS_SEGMENTS,
                                 permute_seed=meta.get("permute_segments"))
    reference = None
    try:
        require_model_vocabulary(saved, test)
        trained = meta.get("heldout") or {}
        schedule = HeldoutSchedule.default(iterations or trained.get("iterations") or 50,
                                           samples or trained.get("samples") or 5,
                                           heldout_observed(observed, trained))
        score = score_heldout(spark, model, meta["hyper"], topic_word, test.blocks, schedule, seed)
        reference = load_corpus(spark, reference_dir or corpus_dir, partitions)
        terms = saved.vocab["term"].to_numpy()[top_word_ids(topic_word, top_words)]
        npmi = coherence(spark, reference, reference_word_ids(terms, reference))
    finally:
        test.blocks.unpersist()
        if reference is not None:
            reference.blocks.unpersist()
    return {
        "gibbs": True, "model": model_dir, "model_type": meta["model"], "corpus": corpus_dir,
        "test_documents": "held-out split of the training corpus" if same_corpus else "all",
        "reference": reference_dir or corpus_dir, "seed": seed, "topics": K,
        "perplexity": score["perplexity"], "heldout": score,
        "npmi": npmi["mean"], "npmi_per_topic": npmi["per_topic"],
        "npmi_settings": {"top_words": npmi["top_words"], "reference_documents": npmi["reference_documents"]},
    }


def heldout_observed(observed, trained: dict) -> float | None:
    """The held-out protocol of ``evaluate``: ``observed`` as given (a fraction, or None for the same-words
    estimator), or with ``"model"`` the one the model was trained with (document completion of half of every
    segment, 0.5, when it records none)."""
    if observed != "model":
        return observed
    return trained["observed"] if "observed" in trained else 0.5


def format_metrics(metrics: dict) -> str:
    h = metrics["heldout"]
    per_topic = " ".join(f"{v:.3f}" for v in metrics["npmi_per_topic"])
    protocol = ("every word fitted and scored" if h.get("observed") is None else
                f"document completion: {h['observed']:g} of every segment observed, the rest scored")
    return "\n".join([
        f"held-out perplexity ({metrics['model_type']}, thesis eq 5.10, topics fixed, {h['iterations']} sweeps, "
        f"{h['samples']} samples, {protocol}): {metrics['perplexity']:.3f} ({h['documents']} documents "
        f"[{metrics['test_documents']}], {h['tokens']} tokens)",
        f"NPMI coherence (top {metrics['npmi_settings']['top_words']}): {metrics['npmi']:.4f}",
        f"NPMI per topic: {per_topic}",
    ])
