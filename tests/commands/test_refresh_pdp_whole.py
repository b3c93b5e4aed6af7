"""spark-topics refresh of a network trained in whole-network mode (issue 30, 2; issue 28, 2: the batch's documents
join the one partition, :mod:`drivers.models.pdp_network.whole_refresh`). Where the data are the same the continued
chain is the uninterrupted one, bit for bit; new documents and words are sampled in with the old state moved onto
the grown network; a refresh killed mid-publication leaves the root readable."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from drivers import registry
from drivers.engines.gibbs import chain
from drivers.families.gibbs.models import make_model
from drivers.families.gibbs.refresh import refresh_chain
from drivers.models.pdp_network import whole_heldout
from drivers.preparation.corpus import prepare_corpus
from drivers.refresh.update import RefreshRequest
from drivers.store import model_root, model_store, publish
from inference.errors import RefusedError
from jobs.evaluate import evaluate_model
from test_refresh import NEW_WORDS, Killed, _raise, run, texts, write_batch
from test_refresh_gibbs import chain_arrays, train_gibbs
from test_refresh_gibbs_steps import step_corpora, summed_state_tables  # noqa: F401  (a fixture)

N, M = 2, 2
#: the word side refused by the split engine: theta and phi share the concentration b_shared (whole-network mode)
SHARED_B = {"name": "shared-b", "parameters": {"b_shared": {"value": 5.0, "sample": True}},
            "nodes": {"root": {"index": ["corpus"], "over": "topic", "dirichlet": 1.0},
                      "theta": {"index": ["document"], "over": "topic", "dp": {"b": "b_shared"},
                                "parents": [{"node": "root", "index": ["corpus"]}]},
                      "base": {"index": ["corpus"], "over": "word", "uniform": True},
                      "phi": {"index": ["topic"], "over": "word", "parents": [{"node": "base", "index": ["corpus"]}],
                              "pyp": {"a": {"value": 0.3, "sample": True}, "b": "b_shared"}}},
            "topic": {"node": "theta", "index": ["document"]}, "word": {"node": "phi", "index": ["topic"]}}


@pytest.fixture(scope="module")
def bow_corpus(request):
    """The 30 documents as a bag of words (made once per test run, tests/commands/test_refresh_gibbs_steps.py)."""
    return request.getfixturevalue("step_corpora") / "bow"


@pytest.fixture(scope="module")
def spec_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("whole_spec") / "shared-b.json"
    path.write_text(json.dumps(SHARED_B))
    return str(path)


def test_a_refresh_where_the_data_are_the_same_continues_the_uninterrupted_chain(spark_session, bow_corpus,
                                                                                 spec_file, tmp_path):
    """Train N iterations (whole-network mode: one partition), continue M with no new document: the version equals
    a run of N+M iterations (z, s, the discounts and concentrations, the clock, the tables, the topics); the
    continued chain is not the first run's."""
    corpus, first, whole = bow_corpus, tmp_path / "first", tmp_path / "whole"
    version = str(tmp_path / "continued")
    train_gibbs(spark_session, "pdp-network", corpus, first, N, "--network", spec_file)
    assert model_store.read_meta(str(first))["partitions"] == 1
    request = RefreshRequest(root=str(tmp_path / "root"), input=None, iterations=M, reinfer_old=True)
    refresh_chain(spark_session, registry.MODELS["pdp-network"], model_store.load_model(str(first)), None, request,
                  version, registry)
    publish.write_marker(version, publish.new_token())
    train_gibbs(spark_session, "pdp-network", corpus, whole, N + M, "--network", spec_file, "--burn-in", N,
                "--lag", 1, "--samples", M)
    continued, uninterrupted, before = chain_arrays(version), chain_arrays(whole), chain_arrays(first)
    assert sorted(continued) == sorted(uninterrupted)
    state = f"state/iter-{N + M:05d}/part-00000.npz"
    assert {f"{state}:{k}" for k in ("z", "s", "avals", "bvals", "clock")} <= set(continued)
    for key, value in uninterrupted.items():
        assert np.array_equal(continued[key], value), key
    assert not np.array_equal(before[f"state/iter-{N:05d}/part-00000.npz:s"], continued[f"{state}:s"])
    assert np.array_equal(np.load(f"{version}/topic_word.npy"), np.load(whole / "topic_word.npy"))
    new, old = model_store.read_meta(version), model_store.read_meta(str(whole))
    assert new["hyper"] == old["hyper"] and new["hyper"] != model_store.read_meta(str(first))["hyper"]


def test_new_documents_and_words_are_sampled_in_and_a_killed_refresh_leaves_the_root_readable(
        spark_session, bow_corpus, spec_file, tmp_path, monkeypatch):
    """A batch of 12 new documents with 3 new words into a whole-network chain: the version has ONE partition (the
    old documents then the batch's), its vocabulary grew, its kept tables equal the state's counts, the new words
    have customers and its documents table holds the batch's documents; it scores new text. A second refresh
    killed with its version half written leaves the root at the first; run again, it publishes every document
    once."""
    corpus, first, root = bow_corpus, tmp_path / "first", tmp_path / "root"
    train_gibbs(spark_session, "pdp-network", corpus, first, N, "--network", spec_file)
    raw = write_batch(tmp_path / "b.jsonl", texts(12, 2, "b", extra=NEW_WORDS))
    report = run(spark_session, "--model", root, "--base", first, "--input", raw, "--iterations", M,
                 "--min-new-df", 1)
    assert report["mode"] == "chain" and report["documents"]["new"] == 12
    version = model_store.resolve(str(root))
    meta, kept_meta = model_store.read_meta(version), chain.read_chain_meta(version)
    V0, V = model_store.read_meta(str(first))["vocab_size"], meta["vocab_size"]
    assert V > V0 and meta["partitions"] == 1 and meta["chain"]["new_partitions"] == 0
    assert meta["data"]["documents"] == 30 + 12
    before, after = chain_arrays(first), chain_arrays(version)
    old_ids = before["blocks/part-00000.npz:doc_ids"]
    ids = after["blocks/part-00000.npz:doc_ids"]
    assert list(ids[:len(old_ids)]) == list(old_ids) and sorted(ids[len(old_ids):]) == [f"b{i:03d}" for i in range(12)]
    model = make_model(registry.MODELS["pdp-network"], kept_meta["fingerprint"]["topics"], V, registry)
    model.bind_hyper(kept_meta["hyper"])
    kept = chain.load_chain_tables(version, model.count_tables(), N + M)
    counted = summed_state_tables(model, chain.chain_dir(version), N + M, 1)
    np.testing.assert_array_equal(counted["nwk"], kept["nwk"])
    for name in (whole_heldout.CELLS, whole_heldout.EDGES):
        assert counted[name].equals(kept[name]), name
    assert kept["nwk"][V0:].sum() > 0 and kept["nwk"].sum() == meta["data"]["tokens"]
    doc_topics = pd.read_parquet(f"{version}/doc_topics.parquet")
    assert sorted(doc_topics["doc_id"]) == [f"b{i:03d}" for i in range(12)]
    scored = evaluate_model(spark_session, version, f"{version}/corpus", seed=1)
    assert 1.0 < scored["perplexity"] < V, scored

    first_version = model_root.latest(str(root))
    raw2 = write_batch(tmp_path / "c.jsonl", texts(5, 3, "c"))
    monkeypatch.setattr(publish, "STEP_HOOK", lambda name: _raise(Killed) if name == "model-written" else None)
    with pytest.raises(Killed):
        run(spark_session, "--model", root, "--input", raw2, "--iterations", 1)
    monkeypatch.setattr(publish, "STEP_HOOK", None)
    assert model_root.latest(str(root)) == first_version
    assert model_store.load_model(str(root)).meta["refresh"]["documents"] == 42
    again = run(spark_session, "--model", root, "--input", raw2, "--iterations", 1)
    assert again["documents"]["new"] == 5 and model_root.latest(str(root)) != first_version
    last = model_store.resolve(str(root))
    ids = chain_arrays(last)["blocks/part-00000.npz:doc_ids"]
    assert len(ids) == len(set(ids)) == 47 == model_store.read_meta(last)["data"]["documents"]


def test_a_batch_whose_vocabulary_does_not_extend_the_models_is_refused_alike_in_both_modes(spark_session, bow_corpus,
                                                                                          spec_file, tmp_path):
    """refresh's one vocabulary check (``refresh_chain``, before the chain is continued; whole-network mode's
    ``continued_chain`` repeated it before): a split pdp-network and one in whole-network mode refuse a batch whose
    vocabulary does not extend theirs with the same line, and no version is written (split: pyp-lda.json)."""
    raw = write_batch(tmp_path / "z.jsonl", texts(8, 5, "z", vocab=12))
    batch = str(tmp_path / "z")
    prepare_corpus(spark_session, raw, batch, min_df=1, max_df=1.0, language="none")
    messages = []
    for name, flags in (("split", ("--network", "pyp-lda")), ("whole", ("--network", spec_file))):
        first, version = tmp_path / name, tmp_path / f"{name}-version"
        train_gibbs(spark_session, "pdp-network", bow_corpus, first, N, *flags)
        assert (model_store.read_meta(str(first))["partitions"] == 1) == (name == "whole")
        request = RefreshRequest(root=str(tmp_path / f"{name}-root"), input=None, iterations=M, reinfer_old=True)
        with pytest.raises(RefusedError) as info:
            refresh_chain(spark_session, registry.MODELS["pdp-network"], model_store.load_model(str(first)), batch,
                          request, str(version), registry)
        messages.append(str(info.value))
        assert not version.exists() or not any(version.iterdir())
    assert messages == [f"{batch}: its vocabulary does not extend the model's"] * 2, messages
