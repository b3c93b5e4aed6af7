"""Evaluation of a Gibbs model: held-out perplexity by the thesis' estimator (one for every Gibbs model; of a test
split of the training corpus with ``--heldout-fraction``, or of a prepared corpus with ``evaluate``) and NPMI
coherence."""
from __future__ import annotations

from drivers import storage
from drivers.corpora import in_process as local_corpus
from drivers.corpora.files import data_version, keeps_text_order
from drivers.corpora.segmented import heldout_condition, load_segmented_corpus
from drivers.evaluation import left_to_right
from drivers.evaluation.heldout import score_heldout, topic_coherence
from drivers.families import TrainRequest
from drivers.families.gibbs.models import needs_order, needs_segments, open_trained
from drivers.families.gibbs.settings import GibbsTraining
from drivers.store import model_store
from drivers.store.model_store import require_same_vocabulary
from inference.gibbs.heldout import HeldoutSchedule
from inference.gibbs.model import GibbsModel


def evaluate_split(spark, spec, model: GibbsModel, hyper: dict, topic_word, request: TrainRequest,
                   e: GibbsTraining) -> dict:
    """Held-out perplexity of the test split of the training corpus (``--heldout-fraction``)."""
    test = load_segmented_corpus(spark, request.corpus, None, heldout_fraction=e.heldout_fraction, split="test",
                                 require_segments=needs_segments(spec, hyper), ordered=needs_order(spec, hyper),
                                 permute_seed=e.permute_segments,
                                 separate_languages=model.aligned_documents_per == "language")
    try:
        schedule = HeldoutSchedule.default(e.heldout_iterations, e.heldout_samples, e.heldout_observed)
        score = score_heldout(spark, model, hyper, topic_word, test.blocks, schedule, seed=request.seed)
    finally:
        test.blocks.unpersist()
    return dict(score, fraction=e.heldout_fraction)


def evaluate(spark, model_dir: str, corpus_dir: str, reference_dir: str | None = None, top_words: int = 10,
             seed: int = 0, partitions: int | None = None, iterations: int | None = None,
             samples: int | None = None, observed: float | None | str = "model", catalogue=None) -> dict:
    """Held-out perplexity and NPMI of a Gibbs model. The test documents are the held-out split of the
    training corpus when ``corpus_dir`` is the corpus it was trained on (same data version) with
    ``--heldout-fraction``, otherwise every document of ``corpus_dir`` (prepared with the model's vocabulary,
    and with ``--segments`` for the structured models). ``catalogue``: the registry, where the model's spec is
    found."""
    saved, model = open_trained(model_dir, catalogue)
    model.bind_scored_corpus(corpus_dir)
    meta = saved.meta
    spec = catalogue.of_meta(meta)
    topic_word = saved.lambda_
    K = topic_word.shape[0]
    if spark is None:       # in this process (why_not_in_process: None)
        test = local_corpus.load_segmented_corpus(corpus_dir, partitions, needs_segments(spec, meta["hyper"]),
                                                  needs_order(spec, meta["hyper"]))
    else:
        test, _ = open_test_corpus(spark, spec, meta, corpus_dir, partitions)
    same_corpus = test.split == "test"
    reference = None
    try:
        require_same_vocabulary(saved, test)
        trained = meta.get("heldout") or {}
        schedule = HeldoutSchedule.default(iterations or trained.get("iterations") or 50,
                                           samples or trained.get("samples") or 5,
                                           heldout_observed(observed, trained))
        score = score_heldout(spark, model, meta["hyper"], topic_word, test.blocks, schedule, seed)
        reference = local_corpus.opened(spark, reference_dir or corpus_dir, partitions)
        npmi = topic_coherence(spark, saved.vocab["term"].to_numpy(), topic_word, reference, top_words)
    finally:
        local_corpus.release(test.blocks)
        if reference is not None:
            local_corpus.release(reference.blocks)
    return {
        "gibbs": True, "model": model_dir, "model_type": meta["model"], "corpus": corpus_dir,
        "test_documents": "held-out split of the training corpus" if same_corpus else "all",
        "reference": reference_dir or corpus_dir, "seed": seed, "topics": K,
        "perplexity": score["perplexity"], "heldout": score,
        "npmi": npmi["mean"], "npmi_per_topic": npmi["per_topic"],
        "npmi_settings": {"top_words": npmi["top_words"], "reference_documents": npmi["reference_documents"]},
    }


def why_not_in_process(model_dir: str, corpus_dir: str, reference_dir: str | None) -> str | None:
    """None when :func:`evaluate` can score the model in this process (``spark`` None): the test documents are the
    whole corpus (not the held-out split of the training corpus), unpermuted, in small local corpora."""
    meta = model_store.read_meta(model_dir)
    data = meta.get("data") or {}
    path = storage.join(corpus_dir, "corpus.json")
    if float(data.get("heldout_fraction") or 0.0) > 0 and storage.exists(path) and \
            data_version(storage.load_json(path)) == data.get("version"):
        return "the held-out split of the training corpus"
    if meta.get("permute_segments") is not None:
        return "a model trained with --permute-segments"
    for directory in dict.fromkeys((corpus_dir, reference_dir or corpus_dir)):
        why_not = local_corpus.why_not_in_process(directory)
        if why_not is not None:
            return why_not
    return None


def tokens_in_order(spec, corpus_meta: dict, text_order: bool, settings: dict | None = None) -> bool:
    """Whether the test documents are loaded with their tokens in text order: the model needs it (under
    ``settings``, model.json's hyper), or ``text_order`` (left-to-right) asks for it and the corpus keeps it."""
    return needs_order(spec, settings) or (text_order and keeps_text_order(corpus_meta))


def open_test_corpus(spark, spec, meta: dict, corpus_dir: str, partitions: int | None = None,
                     text_order: bool = False):
    """``(test corpus, held-out fraction)``: the held-out split of the training corpus when ``corpus_dir`` is the
    corpus the model was trained on (same data version) with ``--heldout-fraction``, otherwise every document
    of ``corpus_dir``; loaded as the model needs it (segments, order, permuted segments); ``text_order``: the
    tokens in text order whenever the corpus keeps it (left-to-right)."""
    data = meta.get("data") or {}
    fraction = float(data.get("heldout_fraction") or 0.0)
    corpus_meta_path = storage.join(corpus_dir, "corpus.json")
    corpus_meta = storage.load_json(corpus_meta_path) if storage.exists(corpus_meta_path) else {}
    same_corpus = fraction > 0 and bool(corpus_meta) and data_version(corpus_meta) == data.get("version")
    ordered = tokens_in_order(spec, corpus_meta, text_order, meta["hyper"])
    test = load_segmented_corpus(spark, corpus_dir, partitions, heldout_fraction=fraction if same_corpus else 0.0,
                                 split="test" if same_corpus else "all",
                                 require_segments=needs_segments(spec, meta["hyper"]), ordered=ordered,
                                 permute_seed=meta.get("permute_segments"))
    return test, fraction


def evaluate_left_to_right(spark, model_dir: str, corpus_dir: str, settings, partitions: int | None = None,
                           catalogue=None) -> dict:
    """Left-to-right figures (:mod:`drivers.evaluation.left_to_right`) of a Gibbs model on its test documents (as
    :func:`evaluate` chooses them), the model's own :meth:`GibbsModel.left_to_right` on every block."""
    saved, model = open_trained(model_dir, catalogue)
    model.bind_scored_corpus(corpus_dir)
    meta = saved.meta
    spec = catalogue.of_meta(meta)
    if spark is None:       # in this process (why_not_in_process: None): every document of a small local corpus
        corpus_meta = storage.load_json(storage.join(corpus_dir, "corpus.json"))
        test, fraction = local_corpus.load_segmented_corpus(
            corpus_dir, partitions, needs_segments(spec, meta["hyper"]),
            tokens_in_order(spec, corpus_meta, True, meta["hyper"])), 0.0
    else:
        test, fraction = open_test_corpus(spark, spec, meta, corpus_dir, partitions, text_order=True)
    try:
        require_same_vocabulary(saved, test)
        result = left_to_right.score(spark, left_to_right.gibbs_payload(model, meta["hyper"], saved.lambda_, settings),
                                     test.blocks, settings, meta["model"])
    finally:
        local_corpus.release(test.blocks)
    where = heldout_condition(fraction) if test.split == "test" else None
    result = left_to_right.with_removed_oov(result, left_to_right.removed_oov(spark, corpus_dir, where))
    result["token_order"] = left_to_right.token_order(test.segmented)
    test_documents = "held-out split of the training corpus" if test.split == "test" else "all"
    return {"left_to_right": result, "gibbs": True, "model": model_dir, "model_type": meta["model"],
            "corpus": corpus_dir, "test_documents": test_documents, "seed": settings.seed,
            "topics": int(saved.lambda_.shape[0])}


def heldout_observed(observed, trained: dict) -> float | None:
    """The held-out protocol of ``evaluate``: ``observed`` as given (a fraction, or None for the same-words
    estimator), or with ``"model"`` the one the model was trained with (document completion of half of every
    segment, 0.5, when it records none)."""
    if observed != "model":
        return observed
    return trained["observed"] if "observed" in trained else 0.5
