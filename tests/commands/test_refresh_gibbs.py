"""spark-topics refresh of Gibbs models (issue 30, item 2): the chain kept in the model directory continues from its
saved state, new documents are sampled in, the vocabulary grows, and where the data are the same the continued
chain is the uninterrupted one, bit for bit."""
from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pandas as pd
import pytest

from drivers import registry
from drivers.engines.gibbs import chain
from drivers.families.gibbs.refresh import refresh_chain
from drivers.preparation.corpus import prepare_corpus
from drivers.refresh.update import RefreshRequest
from drivers.store import model_root, model_store, publish
from jobs import evaluate, infer, topics, train
from shared_runs import made_once, run_folder
from test_refresh import NEW_WORDS, Killed, _raise, run, texts, write_batch

N, M = 4, 4          # iterations of the first run, then of the refresh


def paragraphs(docs):
    """The documents cut into paragraphs of at most 12 words (segmented models)."""
    out = []
    for doc_id, text in docs:
        words = text.split()
        out.append((doc_id, "\n\n".join(" ".join(words[i:i + 12]) for i in range(0, len(words), 12))))
    return out


@pytest.fixture(scope="module")
def corpora(spark_session, tmp_path_factory):
    """40 documents (K=3 LDA) as a bag-of-words corpus and as a segmented one; made once per test run (both
    pytest-xdist workers read them, tests/shared_runs.py), with the models and roots of :func:`g0` and
    :func:`grown` beside them. Tests write elsewhere."""
    root = run_folder(tmp_path_factory) / "refresh_gibbs"
    docs = texts(40, 1, "a")
    kinds = (("bow", docs, {}), ("segmented", paragraphs(docs), {"segments": "paragraph"}))
    with made_once(root) as make:
        if make:
            shutil.rmtree(root, ignore_errors=True)
            root.mkdir()
            for kind, rows, extra in kinds:
                raw = write_batch(root / f"{kind}.jsonl", rows)
                prepare_corpus(spark_session, raw, str(root / kind), min_df=1, max_df=1.0, language="none", **extra)
    return root, {kind: (str(root / f"{kind}.jsonl"), root / kind) for kind, _, _ in kinds}


@pytest.fixture(scope="module")
def g0(spark_session, corpora):
    """lda-gibbs trained N iterations on the bag-of-words corpus (made once per test run; read only)."""
    root_dir, out = corpora
    with made_once(root_dir / "g0") as make:
        if make:
            shutil.rmtree(root_dir / "g0", ignore_errors=True)
            train_gibbs(spark_session, "lda-gibbs", out["bow"][1], root_dir / "g0", N)
    return root_dir / "g0"


def train_gibbs(spark, name, corpus, output, iterations, *extra):
    train.train(spark, train.parse_request(["--model", name, "--corpus", corpus, "--output", output, "--topics", 3,
                                            "--iterations", iterations, "--seed", 3, "--partitions", 2, *extra]))


def npz(path):
    with np.load(path, allow_pickle=False) as f:
        return {k: f[k] for k in f.files}


def chain_arrays(model_dir) -> dict:
    """Every array of the kept chain (blocks, states, tables) by file and key."""
    out = {}
    top = chain.chain_dir(str(model_dir))
    for folder, _, files in os.walk(top):
        for name in files:
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, top)
            if name.endswith(".npz"):
                out.update({f"{rel}:{k}": v for k, v in npz(path).items()})
            elif name.endswith(".npy"):
                out[rel] = np.load(path, allow_pickle=False)
    return out


@pytest.mark.parametrize("name", ["lda-gibbs", "stm", "seqlda", "adatm"])
def test_a_refresh_where_the_data_are_the_same_continues_the_uninterrupted_chain(spark_session, corpora, tmp_path,
                                                                                name, request):
    """Train N iterations, then refresh M more with a batch that holds nothing new (the training documents again:
    adopted, not ingested) and ``--mode chain``: the version equals a run of N+M iterations with the same seed
    whose samples are the refresh's (burn-in N, lag 1, M samples), bit for bit: every partition's state, the
    count tables, the hyperparameters, topic_word and every document's proportions (``--reinfer-old``: the
    continued chain's). The continued chain is not the first run's (the test can fail)."""
    raw, corpus = corpora[1]["bow" if name == "lda-gibbs" else "segmented"]
    first, whole = tmp_path / "first", tmp_path / "whole"
    if name == "lda-gibbs":
        first = request.getfixturevalue("g0")               # that run: read only
    else:
        train_gibbs(spark_session, name, corpus, first, N)
    if name == "lda-gibbs":
        report = run(spark_session, "--model", tmp_path / "root", "--base", first, "--input", raw, "--mode", "chain",
                     "--iterations", M, "--reinfer-old")
        assert report["documents"]["adopted"] == 40 and report["ingested"] == 0 and report["mode"] == "chain"
        version = model_store.resolve(str(tmp_path / "root"))
        assert model_store.read_meta(version)["refresh"]["documents"] == 40    # --reinfer-old: not 40 + 40 rows
    else:       # the family's step alone: the command around it is the same for every Gibbs model
        version = str(tmp_path / "continued")
        request = RefreshRequest(root=str(tmp_path / "root"), input=None, iterations=M, reinfer_old=True)
        refresh_chain(spark_session, registry.MODELS[name], model_store.load_model(str(first)), None, request,
                      version, registry)
        publish.write_marker(version, publish.new_token())
    train_gibbs(spark_session, name, corpus, whole, N + M, "--burn-in", N, "--lag", 1, "--samples", M)
    continued, uninterrupted, before = chain_arrays(version), chain_arrays(whole), chain_arrays(first)
    assert sorted(continued) == sorted(uninterrupted) and any(k.startswith(f"state/iter-{N + M:05d}") for k in continued)
    for key, value in uninterrupted.items():
        assert np.array_equal(continued[key], value), key
    z = [k for k in before if k.startswith("state/") and k.endswith(":z")]
    assert z and any(not np.array_equal(before[k], continued[k.replace(f"iter-{N:05d}", f"iter-{N + M:05d}")])
                     for k in z)
    assert np.array_equal(np.load(os.path.join(version, "topic_word.npy")), np.load(whole / "topic_word.npy"))
    new, old = model_store.read_meta(version), model_store.read_meta(str(whole))
    assert new["hyper"] == old["hyper"] and new["iterations"] == N + M and new["chain"]["continued_from"] == N
    for table, keys in (("doc_topics.parquet", ["doc_id"]), ("segment_topics.parquet", ["doc_id", "segment"])):
        a, b = (pd.read_parquet(os.path.join(d, table)).sort_values(keys).reset_index(drop=True)
                for d in (version, str(whole)))
        assert len(a) >= 40 and list(a["doc_id"]) == list(b["doc_id"]), table
        assert np.array_equal(np.stack(a["theta"]), np.stack(b["theta"])), table


@pytest.fixture(scope="module")
def grown(spark_session, corpora, g0):
    """An lda-gibbs root of :func:`g0` refreshed once with 20 new documents carrying 3 new words (--mode auto: the
    chain); made once per test run, read only (tests that refresh it further work on a copy)."""
    root_dir, out = corpora
    batch = texts(20, 2, "b", extra=NEW_WORDS)
    with made_once(root_dir / "groot") as make:
        if make:
            shutil.rmtree(root_dir / "groot", ignore_errors=True)
            raw1 = write_batch(root_dir / "g1.jsonl", batch)
            report = run(spark_session, "--model", root_dir / "groot", "--base", g0, "--input", raw1,
                         "--iterations", M, "--min-new-df", 3)
            (root_dir / "groot.json").write_text(json.dumps(report))
    return root_dir, json.loads((root_dir / "groot.json").read_text()), batch


def test_new_documents_and_words_are_sampled_in_and_the_version_is_usable(spark_session, corpora, grown, tmp_path,
                                                                          capsys):
    """The new documents get partitions of their own (the old partitions keep their states' files and numbers),
    the count table grows by the new words, whose counts are their occurrences in the batch; the tables equal
    the counts of the kept states; topics, infer and evaluate read the version; the root's document table holds
    the batch's documents."""
    root_dir, report, batch = grown
    root = root_dir / "groot"
    version = model_store.resolve(str(root))
    base = model_store.load_model(str(root_dir / "g0"))
    model = model_store.load_model(str(root))
    V0, V = len(base.vocab), len(model.vocab)
    assert report["mode"] == "chain" and report["documents"]["new"] == 20
    assert set(NEW_WORDS) <= set(model.vocab["term"][V0:]) and model.lambda_.shape == (3, V)
    meta = model.meta
    P, Q = meta["chain"]["old_partitions"], meta["chain"]["new_partitions"]
    assert P == 2 and Q >= 1 and meta["partitions"] == P + Q and meta["iterations"] == N + M
    arrays = chain_arrays(version)
    nwk = arrays[f"nwk-{N + M:05d}.npy"]
    assert nwk.shape == (V, 3)
    words = np.concatenate([arrays[f"blocks/part-{p:05d}.npz:words"] for p in range(P + Q)])
    z = np.concatenate([arrays[f"state/iter-{N + M:05d}/part-{p:05d}.npz:z"] for p in range(P + Q)])
    counted = np.zeros_like(nwk)
    np.add.at(counted, (words, z), 1)
    assert np.array_equal(counted, nwk)                       # the tables are the states' counts
    occurrences = pd.Series(" ".join(t for _, t in batch).split()).value_counts()
    for w in NEW_WORDS:
        assert nwk[list(model.vocab["term"]).index(w)].sum() == occurrences[w]
    old_blocks = chain_arrays(root_dir / "g0")
    for p in range(P):                                         # the old documents stay in their partitions
        key = f"blocks/part-{p:05d}.npz:doc_ids"
        assert np.array_equal(old_blocks[key], arrays[key])
    new_ids = sorted(np.concatenate([arrays[f"blocks/part-{p:05d}.npz:doc_ids"] for p in range(P, P + Q)]))
    assert new_ids == sorted(d for d, _ in batch)
    doc_topics = pd.read_parquet(os.path.join(version, "doc_topics.parquet"))
    assert sorted(doc_topics["doc_id"]) == new_ids            # the version's: the batch's documents
    text = topics.run(_topics_args(root))
    assert any(w in text for w in NEW_WORDS) or len(text.splitlines()) >= 3
    batch_corpus = os.path.join(version, "corpus")             # the batch, prepared with the grown vocabulary
    out = infer.infer_documents(spark_session, version, batch_corpus, str(tmp_path / "inferred"))
    assert out["documents"] == 20
    metrics = evaluate.evaluate_model(spark_session, version, batch_corpus)
    assert np.isfinite(metrics["perplexity"]) and metrics["perplexity"] > 1


def _topics_args(root):
    import argparse
    parser = argparse.ArgumentParser()
    topics.add_arguments(parser)
    return parser.parse_args(["--model", str(root)])


def test_killed_gibbs_refreshes_leave_the_root_readable_and_chain_sweeps_new_keeps_the_old_assignments(
        spark_session, grown, tmp_path, monkeypatch):
    """A refresh killed with the version half written (the chain sampled, model files written, its chain not yet),
    then one killed right after the version's rename (LATEST not yet moved): after each the root reads its previous
    version, and the next refresh publishes on top of it with every document once. That refresh runs
    ``--chain-sweeps new``: the old partitions keep their assignments (marked frozen in the kept chain), the new
    ones are sampled from their start (not the engine's initial state any more), and the tables are still the
    counts of the kept states (the old documents' counts stay in them). The batch also revises a document of
    the previous version (b003, another text): its old copy leaves its partition (block, state and counts), so
    the chain holds every id once and the tables are the counts of the documents present."""
    from drivers.engines.gibbs import state as gibbs_state
    from drivers.families.gibbs.models import make_model
    from inference.gibbs.model import task_seed

    root_dir, _, _ = grown
    root = tmp_path / "root"
    shutil.copytree(root_dir / "groot", root)
    first = model_root.latest(str(root))
    previous = model_store.resolve(str(root))
    before = chain_arrays(previous)
    P = model_store.read_meta(previous)["partitions"]
    revision = ("b003", texts(1, 11, "r")[0][1])                   # b003 (version 1's) with another text
    raw2 = write_batch(tmp_path / "b2.jsonl", texts(10, 10, "m") + [revision])
    for step in ("model-written", "version-moved"):
        monkeypatch.setattr(publish, "STEP_HOOK", lambda name, step=step: _raise(Killed) if name == step else None)
        with pytest.raises(Killed):
            run(spark_session, "--model", root, "--input", raw2, "--iterations", 2)
        monkeypatch.setattr(publish, "STEP_HOOK", None)
        assert model_root.latest(str(root)) == first, step
        assert model_store.load_model(str(root)).meta["refresh"]["documents"] == 60, step
    again = run(spark_session, "--model", root, "--input", raw2, "--iterations", 2, "--chain-sweeps", "new")
    assert (again["documents"]["new"], again["documents"]["revision"]) == (10, 1)
    assert model_root.chain(str(root))[1] == first
    ledgers = pd.concat([model_store.read_parquet(os.path.join(model_root.version_dir(str(root), v),
                                                               "ledger.parquet")) for v in model_root.chain(str(root))])
    assert (ledgers.status == "new").sum() == 30 and ledgers[ledgers.status == "revision"].doc_id.tolist() == ["b003"]
    assert model_store.load_model(str(root)).meta["chain"]["continued_from"] == N + M
    assert [n for n in os.listdir(root / "versions") if n.startswith(".")] == []

    version = model_store.resolve(str(root))
    after = chain_arrays(version)
    meta = model_store.read_meta(version)
    t0, t1 = N + M, N + M + 2
    assert meta["chain"]["swept"] == "new documents" and meta["partitions"] > P and meta["revised_out"] == 1
    ids = np.concatenate([after[f"blocks/part-{p:05d}.npz:doc_ids"] for p in range(meta["partitions"])])
    assert len(ids) == len(set(ids)) == 70 == meta["data"]["documents"] == meta["refresh"]["documents"]
    for p in range(P):          # the old partitions keep their assignments, b003's old copy taken out of its own
        block = f"blocks/part-{p:05d}.npz"
        kept = np.repeat(before[f"{block}:doc_ids"] != "b003",
                         np.diff(before[f"{block}:seg_ptr"][before[f"{block}:doc_ptr"]]))
        assert np.array_equal(before[f"state/iter-{t0:05d}/part-{p:05d}.npz:z"][kept],
                              after[f"state/iter-{t1:05d}/part-{p:05d}.npz:z"])
        assert np.array_equal(before[f"{block}:words"][kept], after[f"{block}:words"])
        assert f"state/iter-{t1:05d}/part-{p:05d}.npz:{chain.FROZEN}" in after
    model = make_model(registry.MODELS["lda-gibbs"], 3, meta["vocab_size"])
    hyper = chain.read_chain_meta(previous)["hyper"]
    for p in range(P, meta["partitions"]):
        block = model.prepare_block(gibbs_state.load_block(chain.chain_dir(version), p))
        start = model.initial_state(block, hyper, task_seed(meta["seed"], 0, p))["z"]
        assert not np.array_equal(start, after[f"state/iter-{t1:05d}/part-{p:05d}.npz:z"])
    nwk = after[f"nwk-{t1:05d}.npy"]
    counted = np.zeros_like(nwk)
    for p in range(meta["partitions"]):
        np.add.at(counted, (after[f"blocks/part-{p:05d}.npz:words"], after[f"state/iter-{t1:05d}/part-{p:05d}.npz:z"]),
                  1)
    assert np.array_equal(counted, nwk)


def test_a_base_trained_with_a_heldout_fraction_counts_its_training_documents_only(spark_session, corpora, tmp_path):
    """lda-gibbs trained with ``--heldout-fraction`` writes doc_topics rows for its held-out split too (``heldout``
    true): documents it never learned from. A root of it counts the training documents only: the batch is
    classified by the base's ledger read with Spark (``update.base_ledger``), so a held-out document in it is new
    (a training one adopted); version 0's ledger (``base_version.write_base_ledger``, what later refreshes read),
    the documents counts and the table's ``version=base`` (``base_doc_topics``' check, the copy without the
    ``heldout`` column) hold the training documents (issue 29)."""
    raw, corpus = corpora[1]["bow"]
    docs = dict(texts(40, 1, "a"))                       # the corpus' documents (its raw input)
    base = tmp_path / "held"
    train_gibbs(spark_session, "lda-gibbs", corpus, base, N, "--heldout-fraction", 0.25, "--heldout-iterations", 4,
                "--heldout-samples", 1)
    rows = pd.read_parquet(base / "doc_topics.parquet")
    held, trained = sorted(rows.doc_id[rows.heldout]), sorted(rows.doc_id[~rows.heldout])
    assert len(held) >= 2 and len(trained) + len(held) == 40 and rows.doc_id.is_unique
    root = tmp_path / "root"
    fresh = held[:2] + [d for d, _ in texts(3, 5, "n")]
    batch = [(d, docs[d]) for d in held[:2] + trained[:1]] + texts(3, 5, "n")
    report = run(spark_session, "--model", root, "--base", base, "--input", write_batch(tmp_path / "b.jsonl", batch),
                 "--iterations", 2)
    assert (report["documents"]["new"], report["documents"]["adopted"], report["ingested"]) == (5, 1, 5)
    version = model_store.resolve(str(root))
    meta = model_store.read_meta(version)
    assert meta["refresh"]["documents"] == len(trained) + 5 == meta["data"]["documents"]       # the chain's count
    assert meta["refresh"]["base_documents"] == len(trained)
    assert sorted(pd.read_parquet(os.path.join(version, "doc_topics.parquet")).doc_id) == sorted(fresh)
    ledger = model_store.read_parquet(os.path.join(version, "ledger.parquet"))
    assert dict(zip(ledger.doc_id, ledger.status)) == {**{d: "new" for d in fresh}, trained[0]: "adopted"}
    zero = model_root.version_dir(str(root), model_root.chain(str(root))[-1])
    ledger = model_store.read_parquet(os.path.join(zero, "ledger.parquet"))
    assert sorted(ledger.doc_id) == trained and set(ledger.status) == {"base"}
    zero_meta = model_store.read_meta(zero)["refresh"]         # parent: the base, what base_doc_topics checks
    assert zero_meta["documents"] == zero_meta["parent"]["documents"] == len(trained)
    in_base = pd.read_parquet(root / "doc_topics" / "version=base")
    assert sorted(in_base.doc_id) == trained and "heldout" not in in_base.columns
    whole = spark_session.read.parquet(str(root / "doc_topics"))
    assert "heldout" not in whole.columns and whole.count() == len(trained) + 5
