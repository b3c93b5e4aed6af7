"""The runs the tests of a pdp-network's refresh share (tests/commands/test_refresh_pdp_*.py, on the 30 documents of
``test_refresh_gibbs_steps.step_corpora``): a chain continued with the same data against the uninterrupted one
(:func:`continued_is_uninterrupted`), a batch of new documents with new words (:func:`refreshed_with_new_words`,
:func:`kept_and_counted`) and new text scored by the version (:func:`scored_new_text`)."""
from __future__ import annotations

import os

import numpy as np

from drivers import registry
from drivers.engines.gibbs import chain
from drivers.families.gibbs.models import make_model
from drivers.families.gibbs.refresh import refresh_chain
from drivers.preparation.corpus import prepare_corpus
from drivers.refresh.update import RefreshRequest
from drivers.store import model_store, publish
from jobs.evaluate import evaluate_model
from test_refresh import NEW_WORDS, run, texts, write_batch
from test_refresh_gibbs import chain_arrays, train_gibbs
from test_refresh_gibbs_steps import summed_state_tables

#: the first training's iterations, the continuation's
N, M = 2, 2


def continued_is_uninterrupted(spark, corpus, tmp_path, flags, saved=("topic_word",), hyper_moved=True,
                               root="root") -> dict:
    """Train N iterations (``tmp_path/first``), continue M with no new document (the refresh's ``tmp_path/root``),
    and train N+M at once: the version equals the uninterrupted run (every partition's state and table in the kept
    chain, the ``saved`` arrays, the hyperparameters, which moved since the first N where ``hyper_moved``). Returns
    the version's chain arrays."""
    first, whole, version = tmp_path / "first", tmp_path / "whole", str(tmp_path / "continued")
    train_gibbs(spark, "pdp-network", corpus, first, N, *flags)
    request = RefreshRequest(root=str(tmp_path / root), input=None, iterations=M, reinfer_old=True)
    refresh_chain(spark, registry.MODELS["pdp-network"], model_store.load_model(str(first)), None, request, version,
                  registry)
    publish.write_marker(version, publish.new_token())
    train_gibbs(spark, "pdp-network", corpus, whole, N + M, *flags, "--burn-in", N, "--lag", 1, "--samples", M)
    continued, uninterrupted = chain_arrays(version), chain_arrays(whole)
    assert sorted(continued) == sorted(uninterrupted)
    for key, value in uninterrupted.items():
        assert np.array_equal(continued[key], value), key
    for name in saved:
        assert np.array_equal(np.load(os.path.join(version, f"{name}.npy")), np.load(whole / f"{name}.npy")), name
    if hyper_moved:
        new, old = model_store.read_meta(version), model_store.read_meta(str(whole))
        assert new["hyper"] == old["hyper"] and new["hyper"] != model_store.read_meta(str(first))["hyper"]
    return continued


def refreshed_with_new_words(spark, corpus, tmp_path, flags, iterations=M, root="root", trained=False) -> tuple:
    """Train N iterations (``tmp_path/first``; ``trained``: already there), then refresh ``tmp_path/root`` with a
    batch of 12 new documents bringing 3 new words for ``iterations``: the chain mode, 12 new documents, the new
    words in the grown vocabulary. Returns (the version, its meta, the old vocabulary's size, the new's)."""
    first = tmp_path / "first"
    if not trained:
        train_gibbs(spark, "pdp-network", corpus, first, N, *flags)
    raw = write_batch(tmp_path / "b.jsonl", texts(12, 2, "b", extra=NEW_WORDS))
    report = run(spark, "--model", tmp_path / root, "--base", first, "--input", raw, "--iterations", iterations,
                 "--min-new-df", 1)
    assert report["mode"] == "chain" and report["documents"]["new"] == 12
    version = model_store.resolve(str(tmp_path / root))
    meta = model_store.read_meta(version)
    V0, V = model_store.read_meta(str(first))["vocab_size"], meta["vocab_size"]
    assert V > V0 and set(NEW_WORDS) <= set(model_store.load_model(version).vocab["term"][V0:])
    return version, meta, V0, V


def kept_and_counted(version: str, meta: dict, iteration: int) -> tuple:
    """(the model as kept, the kept chain's tables at ``iteration``, their sum over every partition's own
    ``table_counts``: what the kept must equal)."""
    kept_meta = chain.read_chain_meta(version)
    P, Q = meta["chain"]["old_partitions"], meta["chain"]["new_partitions"]
    model = make_model(registry.MODELS["pdp-network"], kept_meta["fingerprint"]["topics"], meta["vocab_size"],
                       registry)
    model.bind_hyper(kept_meta["hyper"])
    kept = chain.load_chain_tables(version, model.count_tables(), iteration)
    return model, kept, summed_state_tables(model, chain.chain_dir(version), iteration, P + Q)


def scored_new_text(spark, version: str, tmp_path, ordered: bool = False) -> dict:
    """``evaluate`` of the version on 4 new documents with the new words, prepared with its vocabulary."""
    vocab_path = str(tmp_path / "vocab.parquet")
    model_store.load_model(version).vocab[["term", "id"]].to_parquet(vocab_path)
    order = {"ordered": True} if ordered else {}
    prepare_corpus(spark, write_batch(tmp_path / "c.jsonl", texts(4, 5, "c", extra=NEW_WORDS)),
                   str(tmp_path / "scored"), language="none", vocab=vocab_path, **order)
    return evaluate_model(spark, version, str(tmp_path / "scored"), seed=1)
