"""spark-topics refresh of the Gibbs models with a driver-side global step (issue 30, item 2): dp-mixture,
cluster-lda, pdp-network and tlm continue their chain. The first run skips the step after its last iteration N;
the chain keeps the partitions' statistics of N, so the refresh takes that step (clusters renumbered,
concentrations sampled, Gibbs EM's M-step) before iteration N + 1 as the uninterrupted run does."""
from __future__ import annotations

import os
import shutil

import numpy as np
import pandas as pd
import pytest

from drivers import registry
from drivers.engines.gibbs import chain, state as gibbs_state
from drivers.families.gibbs.models import make_model
from drivers.families.gibbs.refresh import refresh_chain, refusal
from drivers.preparation.corpus import prepare_corpus
from drivers.refresh.drift_report import write_report
from drivers.refresh.update import RefreshRequest
from drivers.store import model_root, model_store, publish
from inference.errors import RefusedError
from inference.gibbs.tables import KeyedCounts, merge
from shared_runs import made_once, run_folder
from test_refresh import NEW_WORDS, Killed, _raise, run, texts, write_batch
from test_refresh_gibbs import chain_arrays, paragraphs, train_gibbs

N, M = 2, 2          # iterations of the first run, then of the refresh (each a Spark job: kept few)

STEPPED = ("dp-mixture", "cluster-lda", "pdp-network", "tlm")
#: the corpus each model reads, and its options (small, so the 4 x 3 runs stay cheap)
KIND = {"dp-mixture": "bow", "cluster-lda": "bow", "pdp-network": "segmented", "tlm": "ordered"}
EXTRA = {"pdp-network": ("--network", "hca"), "tlm": ("--prior-variant", "2")}
PREPARE = {"bow": {}, "segmented": {"segments": "paragraph"}, "ordered": {"ordered": True}}


@pytest.fixture(scope="module")
def step_corpora(spark_session, tmp_path_factory):
    """30 documents (K=3 LDA) prepared three ways (bag of words, paragraphs, word order); made once per test
    run."""
    root = run_folder(tmp_path_factory) / "refresh_gibbs_steps"
    docs = texts(30, 1, "a")
    with made_once(root) as make:
        if make:
            shutil.rmtree(root, ignore_errors=True)
            root.mkdir()
            for kind, options in PREPARE.items():
                raw = write_batch(root / f"{kind}.jsonl", paragraphs(docs) if kind == "segmented" else docs)
                prepare_corpus(spark_session, raw, str(root / kind), min_df=1, max_df=1.0, language="none",
                               **options)
    return root


def _train(spark, name, corpus, output, iterations, *extra):
    train_gibbs(spark, name, corpus, output, iterations, *EXTRA.get(name, ()), *extra)


@pytest.fixture(scope="module")
def first_runs(spark_session, step_corpora, tmp_path_factory):
    """Every model trained N iterations on its corpus, once for the module's tests (read only)."""
    folder, made = tmp_path_factory.mktemp("first_runs"), {}

    def first(name):
        if name not in made:
            _train(spark_session, name, step_corpora / KIND[name], folder / name, N)
            made[name] = folder / name
        return made[name]
    return first


@pytest.mark.parametrize("name", STEPPED)
def test_a_refresh_where_the_data_are_the_same_takes_the_skipped_step_and_continues_the_uninterrupted_chain(
        spark_session, step_corpora, first_runs, tmp_path, name):
    """Train N iterations, continue M with no new document: the version equals a run of N+M iterations with the
    same seed and the refresh's samples, bit for bit (every partition's state, the tables, the hyperparameters,
    topic_word). The continued chain is not the first run's: its sampled hyperparameters moved."""
    corpus = step_corpora / KIND[name]
    first, whole, version = first_runs(name), tmp_path / "whole", str(tmp_path / "continued")
    request = RefreshRequest(root=str(tmp_path / "root"), input=None, iterations=M, reinfer_old=True)
    refresh_chain(spark_session, registry.MODELS[name], model_store.load_model(str(first)), None, request, version,
                  registry)
    publish.write_marker(version, publish.new_token())
    _train(spark_session, name, corpus, whole, N + M, "--burn-in", N, "--lag", 1, "--samples", M)
    continued, uninterrupted = chain_arrays(version), chain_arrays(whole)
    assert sorted(continued) == sorted(uninterrupted) and f"last_stats-{N + M:05d}.npy" in continued
    for key, value in uninterrupted.items():
        assert np.array_equal(continued[key], value), key
    assert np.array_equal(np.load(os.path.join(version, "topic_word.npy")), np.load(whole / "topic_word.npy"))
    new, old = model_store.read_meta(version), model_store.read_meta(str(whole))
    assert new["hyper"] == old["hyper"] and new["iterations"] == N + M and new["chain"]["continued_from"] == N
    assert new["hyper"] != model_store.read_meta(str(first))["hyper"]


def summed_state_tables(model, chain_dir: str, iteration: int, partitions: int) -> dict:
    """The tables as the sum of every kept partition's ``table_counts`` (what the engine's tables must equal)."""
    contributions = {t.name: [] for t in model.count_tables()}
    for p in range(partitions):
        item = gibbs_state.new_item(model, gibbs_state.load_block(chain_dir, p))
        state = gibbs_state.read_state(chain_dir, iteration, p)
        state.pop(chain.FROZEN, None)
        for table, value in model.table_counts(item["block"], state, (item["vocab_ids"], item["local"])).items():
            contributions[table].append(value)
    return {t.name: merge(t, contributions[t.name]) for t in model.count_tables()}


@pytest.mark.parametrize("name", STEPPED)
def test_new_documents_and_words_are_sampled_in(spark_session, first_runs, tmp_path, name, monkeypatch):
    """A batch of 12 new documents with 3 new words: the vocabulary grows, the new documents get partitions of
    their own after the old ones (which keep their blocks), the tables equal the summed counts of the kept
    states over the grown vocabulary, and the version's document table holds the batch. For dp-mixture a refresh
    killed with the version half written first leaves the root on its previous version."""
    first = first_runs(name)
    root = tmp_path / "root"
    batch = texts(12, 2, "b", extra=NEW_WORDS)
    raw = write_batch(tmp_path / "b.jsonl", paragraphs(batch) if KIND[name] == "segmented" else batch)
    if name == "dp-mixture":
        monkeypatch.setattr(publish, "STEP_HOOK", lambda step: _raise(Killed) if step == "model-written" else None)
        with pytest.raises(Killed):
            run(spark_session, "--model", root, "--base", first, "--input", raw, "--iterations", M, "--min-new-df", 1)
        monkeypatch.setattr(publish, "STEP_HOOK", None)
        assert model_root.latest(str(root)) is None and not os.path.exists(root / "versions" / "000001")
    report = run(spark_session, "--model", root, "--base", first, "--input", raw, "--iterations", M,
                 "--min-new-df", 1)
    assert report["mode"] == "chain" and report["documents"]["new"] == 12
    version = model_store.resolve(str(root))
    meta = model_store.read_meta(version)
    V0, V = model_store.read_meta(str(first))["vocab_size"], meta["vocab_size"]
    vocab = list(model_store.load_model(version).vocab["term"])
    assert V > V0 and set(NEW_WORDS) <= set(vocab[V0:])
    P, Q = meta["chain"]["old_partitions"], meta["chain"]["new_partitions"]
    assert P == 2 and Q >= 1 and meta["iterations"] == N + M
    arrays, old = chain_arrays(version), chain_arrays(first)
    for p in range(P):
        assert np.array_equal(old[f"blocks/part-{p:05d}.npz:doc_ids"], arrays[f"blocks/part-{p:05d}.npz:doc_ids"])
    new_ids = sorted(np.concatenate([arrays[f"blocks/part-{p:05d}.npz:doc_ids"] for p in range(P, P + Q)]))
    assert new_ids == sorted(d for d, _ in batch)
    kept_meta = chain.read_chain_meta(version)
    model = make_model(registry.MODELS[name], kept_meta["fingerprint"]["topics"], V, registry)
    model.bind_hyper(kept_meta["hyper"])
    kept = chain.load_chain_tables(version, model.count_tables(), N + M)
    counted = summed_state_tables(model, chain.chain_dir(version), N + M, P + Q)
    for table, value in counted.items():
        if isinstance(value, KeyedCounts):
            assert value.equals(kept[table]), table
        else:
            assert np.array_equal(value, kept[table]), table
    words = np.concatenate([arrays[f"blocks/part-{p:05d}.npz:words"] for p in range(P + Q)])
    assert {vocab.index(w) for w in NEW_WORDS} <= set(words.tolist())
    doc_topics = pd.read_parquet(os.path.join(version, "doc_topics.parquet"))
    assert sorted(doc_topics["doc_id"]) == new_ids
    # every per-document table of the version covers the batch's documents, as doc_topics does (issue 30, 3)
    tables = [n for n in ("segment_topics.parquet", "doc_clusters.parquet") if os.path.exists(os.path.join(version, n))]
    assert ("doc_clusters.parquet" in tables) == (name in ("dp-mixture", "cluster-lda"))
    for table in tables:
        assert sorted(set(pd.read_parquet(os.path.join(version, table))["doc_id"])) == new_ids, table
    # the drift report across the base and the version, whatever their numbers of clusters (issue 30, 4)
    drift = write_report(str(root), str(tmp_path / "drift"))
    rows = [model_store.load_model(model_root.version_dir(str(root), v)).topic_word().shape[0]
            for v in drift["versions"]]
    assert len(drift["tracks"]) == rows[-1] and len(drift["steps"][0]["matching"]) == rows[-1]
    assert (tmp_path / "drift" / "drift.png").exists()
    print(f"{name}: rows per version {rows}")


def test_bigram_lm_refresh_adds_the_batch_counts_and_equals_a_retrain_on_the_union(spark_session, step_corpora,
                                                                                   tmp_path):
    """bigram-lm (no latent variable: its counts are the model): a refresh counts the batch (12 documents, 3 new
    words) and adds the model's counts re-keyed to the grown vocabulary, then fits beta n from train's start: the
    version equals a model trained on the union prepared with the same vocabulary, bit for bit (bigram keys and
    counts, the base measure, the hyperparameters). A batch with nothing new is refused in one line; a batch that
    revises a document gives the retrain on the union holding its new text (the old copy's bigrams taken out)."""
    first, union = tmp_path / "first", tmp_path / "union"
    train_gibbs(spark_session, "bigram-lm", step_corpora / "ordered", first, 1)
    batch = texts(12, 2, "b", extra=NEW_WORDS)
    raw = write_batch(tmp_path / "b.jsonl", batch)
    root = tmp_path / "root"
    report = run(spark_session, "--model", root, "--base", first, "--input", raw, "--min-new-df", 1)
    assert report["mode"] == "chain" and report["documents"]["new"] == 12
    version = model_store.resolve(str(root))
    refreshed = model_store.load_model(version)
    assert set(NEW_WORDS) <= set(refreshed.vocab["term"])
    vocab_path = str(tmp_path / "vocab.parquet")
    refreshed.vocab[["term", "id"]].to_parquet(vocab_path)
    both = write_batch(tmp_path / "union.jsonl", texts(30, 1, "a") + batch)
    prepare_corpus(spark_session, both, str(tmp_path / "union_corpus"), language="none", vocab=vocab_path,
                   **PREPARE["ordered"])
    train_gibbs(spark_session, "bigram-lm", tmp_path / "union_corpus", union, 1)
    for name in ("bigram_keys", "bigram_counts", "base_measure"):
        assert np.array_equal(np.load(os.path.join(version, f"{name}.npy")), np.load(union / f"{name}.npy")), name
    new, retrained = model_store.read_meta(version), model_store.read_meta(str(union))
    assert new["hyper"] == retrained["hyper"] and new["vocab_size"] == retrained["vocab_size"]
    assert new["data"]["documents"] == 42 and new["bigrams"] == retrained["bigrams"]
    perplexities = pd.read_parquet(os.path.join(version, "doc_perplexity.parquet"))
    assert sorted(perplexities.doc_id) == sorted(d for d, _ in batch)
    with pytest.raises(RefusedError, match="no new document"):
        run(spark_session, "--model", root, "--input", raw, "--mode", "chain")
    # a revision (b003, another text): its old copy's bigrams leave the counts, its new text's enter: the model a
    # retrain on the union holding b003's new text gives, bit for bit (issue 30, item 2)
    revision = ("b003", texts(1, 9, "r")[0][1])
    report = run(spark_session, "--model", root, "--input", write_batch(tmp_path / "r.jsonl", [revision]),
                 "--min-new-df", 1)
    assert report["documents"]["revision"] == 1
    revised = model_store.resolve(str(root))
    model_store.load_model(revised).vocab[["term", "id"]].to_parquet(vocab_path)
    both = write_batch(tmp_path / "union2.jsonl", texts(30, 1, "a") + [revision if d == "b003" else (d, t)
                                                                         for d, t in batch])
    prepare_corpus(spark_session, both, str(tmp_path / "union2_corpus"), language="none", vocab=vocab_path,
                   **PREPARE["ordered"])
    train_gibbs(spark_session, "bigram-lm", tmp_path / "union2_corpus", tmp_path / "union2", 1)
    for name in ("bigram_keys", "bigram_counts", "base_measure"):
        assert np.array_equal(np.load(os.path.join(revised, f"{name}.npy")),
                              np.load(tmp_path / "union2" / f"{name}.npy")), name
    assert model_store.read_meta(revised)["hyper"] == model_store.read_meta(str(tmp_path / "union2"))["hyper"]
    assert model_store.read_meta(revised)["data"]["documents"] == 42 == model_store.read_meta(revised)["refresh"][
        "documents"] and model_store.read_meta(revised)["revised_out"] == 1
    # --reinfer-old: every document counted (the union, each id's latest text, in text order), the model's counts
    # left out: the same model, and every document's perplexity and row, those of the retrain on the union
    again = tmp_path / "again"
    run(spark_session, "--model", again, "--base", first, "--input", raw, "--min-new-df", 1, "--reinfer-old")
    everything = model_store.resolve(str(again))
    for name in ("bigram_keys", "bigram_counts", "base_measure"):
        assert np.array_equal(np.load(os.path.join(everything, f"{name}.npy")), np.load(union / f"{name}.npy")), name
    assert model_store.read_meta(everything)["data"]["documents"] == 42
    for table in ("doc_perplexity.parquet", "doc_topics.parquet"):
        mine, retrained = (pd.read_parquet(os.path.join(d, table)).sort_values("doc_id").reset_index(drop=True)
                           for d in (everything, union))
        assert len(mine) == 42 and mine.drop(columns=["heldout"], errors="ignore").equals(
            retrained.drop(columns=["heldout"], errors="ignore")), table


def test_every_gibbs_model_refreshes():
    """Every Gibbs model refreshes: the tree models with --inference gibbs (tests/commands/test_refresh_tree_gibbs.py)
    and cluster-lda's author variant (tests/commands/test_refresh_cluster_authors.py) too."""
    specs = [spec for spec in registry.MODELS.values() if spec.family == "gibbs"]
    specs += [registry.model(name, "gibbs") for name in ("tlda", "ptlda")]
    why = {spec.name: refusal(spec) for spec in specs}
    assert all(w is None for w in why.values()), why
    assert all(spec.refresh_modes == registry.GIBBS_REFRESH for spec in specs)
    assert refusal(registry.MODELS["cluster-lda"], {"author_column": "authors"}) is None
