"""pdp-network on the Gibbs engine with global statistics (issue 28, 2): hdp-lda's corpus-level topic vector
(the documents' tables summed over two partitions, table ``network_tc``) and a network with a sampled discount and
a sampled concentration (the driver's slice steps on the summed histograms, table ``discount_counts``): the
tables the reducers sum equal a recount of the final states, the hyperparameters move, and a run interrupted
after iteration 3 and resumed from its checkpoint is the uninterrupted chain; and pyp-lda's Pitman-Yor word side
(table ``word_tables``, each partition's own tables), likewise, and with the resident sampler the same chain; and
seqlda.json under CMGS (and under the exact multiplicity sampler) likewise, and trained on local[1] (another Spark application) the same model bit for bit;
and roots indexed by a kept column (``column``) or by a list column (``authors``: a document's vector over the mean
of its authors' roots); and a word side indexed by [topic, column:group] (``dtm``); and three Pitman-Yor word
levels per topic over a corpus-level one (``pyp-lda-4``, :mod:`drivers.models.pdp_network.words_stack`); and a
word vector over two roots mixed by rho (``pyp-lda-mix``, :mod:`drivers.models.pdp_network.words_mix`); and
tlm.json (phi[topic, previous_word] over psi[topic]: its keyed tables, each partition's own indicators), likewise."""
from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from drivers.engines.gibbs.settings import SampleSchedule
from drivers.models.pdp_network.model import PdpNetwork
from drivers.models.pdp_network.engine_specs import SHIPPED
from engine_runs import Interrupted, assert_same_runs, fit_and_recount
from inference.gibbs.model import SegmentedBlock

V, K, ITERATIONS = 12, 3, 6
SAMPLED_STM = {"name": "stm-ab",
               "nodes": {"doc": {"index": ["document"], "over": "topic", "dirichlet": 0.3},
                         "seg": {"index": ["segment"], "over": "topic",
                                 "pyp": {"a": {"value": 0.2, "sample": True}, "b": {"value": 2.0, "sample": True}},
                                 "parents": [{"node": "doc", "index": ["document"]}]},
                         "phi": {"index": ["topic"], "over": "word", "dirichlet": 0.05}},
               "topic": {"node": "seg", "index": ["segment"]}, "word": {"node": "phi", "index": ["topic"]}}


@pytest.fixture(scope="module")
def blocks(spark_session):
    rng = np.random.default_rng(4)
    docs = [(f"d{i:02d}", [list(rng.integers(0, V, rng.integers(3, 9))) for _ in range(rng.integers(1, 4))])
            for i in range(24)]
    parts = [SegmentedBlock.from_segments(docs[p::2]) for p in range(2)]
    rdd = spark_session.sparkContext.parallelize(list(enumerate(parts)), 2).cache()
    yield rdd
    rdd.unpersist()


GROUP_HDP = {"name": "group-hdp",      # documents DP over their group's root (a kept column's value)
             "nodes": {"group": {"index": ["column:group"], "over": "topic", "dirichlet": 0.5},
                       "theta": {"index": ["document"], "over": "topic", "dp": {"b": {"value": 1.0, "sample": True}},
                                 "parents": [{"node": "group", "index": ["column:group"]}]},
                       "phi": {"index": ["topic"], "over": "word", "dirichlet": 0.05}},
             "topic": {"node": "theta", "index": ["document"]}, "word": {"node": "phi", "index": ["topic"]}}
AUTHOR_DP = {"name": "author-dp",      # documents DP around the mean of their authors' roots (a list column)
             "nodes": {"author": {"index": ["list:authors"], "over": "topic", "dirichlet": 0.5},
                       "theta": {"index": ["document"], "over": "topic", "dp": {"b": {"value": 1.0, "sample": True}},
                                 "weights": "uniform", "parents": [{"node": "author", "index": ["list:authors"]}]},
                       "phi": {"index": ["topic"], "over": "word", "dirichlet": 0.05}},
             "topic": {"node": "theta", "index": ["document"]}, "word": {"node": "phi", "index": ["topic"]}}

DTM = {"name": "dtm",       # differential topic models: phi[topic, group] PYP over phi0[topic] PYP over the uniform
       "nodes": {"theta": {"index": ["document"], "over": "topic", "dirichlet": 0.3},
                 "base": {"index": ["corpus"], "over": "word", "uniform": True},
                 "phi0": {"index": ["topic"], "over": "word", "parents": [{"node": "base", "index": ["corpus"]}],
                          "pyp": {"a": {"value": 0.4, "sample": True}, "b": {"value": 2.0, "sample": True}}},
                 "phi": {"index": ["topic", "column:group"], "over": "word",
                         "parents": [{"node": "phi0", "index": ["topic"]}],
                         "pyp": {"a": {"value": 0.4, "sample": True}, "b": {"value": 2.0, "sample": True}}}},
       "topic": {"node": "theta", "index": ["document"]}, "word": {"node": "phi", "index": ["topic", "column:group"]}}
AUTHOR_PYP = dict(AUTHOR_DP, name="author-pyp", nodes=dict(     # the authors' vectors Pitman-Yor over a corpus root
    AUTHOR_DP["nodes"], base={"index": ["corpus"], "over": "topic", "dirichlet": 1.0},
    author={"index": ["list:authors"], "over": "topic", "parents": [{"node": "base", "index": ["corpus"]}],
            "pyp": {"a": {"value": 0.2, "sample": True}, "b": {"value": 2.0, "sample": True}}}))

PYP_TOPICS = {"name": "pyp-topics",    # every token's topic drawn from the corpus-level Pitman-Yor vector itself
              "nodes": {"base": {"index": ["corpus"], "over": "topic", "dirichlet": 1.0},
                        "corpus": {"index": ["corpus"], "over": "topic",
                                   "pyp": {"a": {"value": 0.2, "sample": True}, "b": {"value": 2.0, "sample": True}},
                                   "parents": [{"node": "base", "index": ["corpus"]}]},
                        "phi": {"index": ["topic"], "over": "word", "dirichlet": 0.05}},
              "topic": {"node": "corpus", "index": ["corpus"]}, "word": {"node": "phi", "index": ["topic"]}}
TWO_PARENTS = dict(PYP_TOPICS, name="two-parents", topic={"node": "theta", "index": ["document"]}, nodes=dict(
    PYP_TOPICS["nodes"], base2={"index": ["corpus"], "over": "topic", "dirichlet": 0.2},
    corpus=dict(PYP_TOPICS["nodes"]["corpus"], parents=[{"node": "base", "index": ["corpus"], "gamma": 1.0},
                                                         {"node": "base2", "index": ["corpus"], "gamma": 0.5}]),
    theta={"index": ["document"], "over": "topic", "dp": {"b": 1.0},
           "parents": [{"node": "corpus", "index": ["corpus"]}]}))
_PYP_LDA_3 = json.loads((SHIPPED / "pyp-lda-3.json").read_text())
PYP_LDA_4 = dict(_PYP_LDA_3, name="pyp-lda-4", nodes=dict(     # three Pitman-Yor levels per topic (words_stack)
    _PYP_LDA_3["nodes"], phi2=_PYP_LDA_3["nodes"]["phi1"],
    phi1=dict(_PYP_LDA_3["nodes"]["phi1"], parents=[{"node": "phi2", "index": ["topic"]}])))


@pytest.fixture(scope="module")
def group_corpus(tmp_path_factory):
    """A corpus directory whose docs.parquet has the column ``group`` (g0, g1, g2 by the document's number) and the
    list column ``authors`` (an even document by a_i and a_i+1 modulo 4, an odd one by a_i)."""
    directory = tmp_path_factory.mktemp("groups")
    (directory / "docs.parquet").mkdir()
    authors = [json.dumps([f"a{i % 4}", f"a{(i + 1) % 4}"] if i % 2 == 0 else [f"a{i % 4}"]) for i in range(24)]
    pq.write_table(pa.table({"doc_id": [f"d{i:02d}" for i in range(24)], "group": [f"g{i % 3}" for i in range(24)],
                             "authors": authors}), directory / "docs.parquet" / "part-0.parquet")
    return str(directory)


def _fit(spark_session, blocks, directory, network, resume=False, stop_after=None, sync="jobs", corpus=None):
    model = PdpNetwork(K, V)
    model._corpus_dir = corpus          # what bind_corpus notes (the kept columns' values are read from it)
    return fit_and_recount(spark_session, model, blocks, 2, directory, SampleSchedule.resolve(ITERATIONS, 4, 1, 1),
                           7, sync, model.initial_hyper(network=network), resume, stop_after)


@pytest.fixture(scope="module")
def spec_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("spec") / "stm-ab.json"
    path.write_text(json.dumps(SAMPLED_STM))
    return str(path)


@pytest.mark.parametrize("which", ["hdp-lda", "sampled", "pyp-lda", "seqlda", "column", "hdp-pyp-lda", "authors",
                                   "authors-pyp", "pyp-lda-2", "hca", "hca-2", "pyp-topics", "adatm-cmgs",
                                   "dtm", "two-parents", "seqlda-exact", "hdp-pyp-lda-cmgs", "pyp-lda-cmgs",
                                   "pyp-lda-exact", "hca-exact", "pyp-topics-exact", "pyp-lda-4", "pyp-lda-mix"])
def test_global_tables_are_the_recount_hyper_moves_and_resume_is_the_same_chain(spark_session, blocks, spec_file,
                                                                                group_corpus, tmp_path, which):
    network = spec_file if which == "sampled" else which
    if which in ("column", "authors", "authors-pyp", "pyp-topics", "dtm", "two-parents", "pyp-topics-exact",
                 "pyp-lda-4"):
        network = str(tmp_path / f"{which}.json")       # (pyp-topics-exact: cmgs_shared_tokens)
        specs = {"column": GROUP_HDP, "authors": AUTHOR_DP, "authors-pyp": AUTHOR_PYP, "pyp-topics": PYP_TOPICS,
                 "dtm": DTM, "two-parents": TWO_PARENTS, "pyp-topics-exact": dict(PYP_TOPICS, sampler="exact"),
                 "pyp-lda-4": PYP_LDA_4}
        (tmp_path / f"{which}.json").write_text(json.dumps(specs[which]))
    if which in ("adatm-cmgs", "seqlda-exact", "hdp-pyp-lda-cmgs", "pyp-lda-cmgs", "pyp-lda-exact", "hca-exact"):
        # CMGS at two-parent segments (cmgs_dag); pyp-lda's word side in multiplicity form (word_mult), beside
        # hdp-pyp-lda's topic side (hca: cmgs_owned_words);
        name, sampler = which.rsplit("-", 1)    # the exact multiplicity sampler (multiplicity); cmgs beside a shared
                                                # Pitman-Yor vector (inference.pdpnet.cmgs_owned)
        network = str(tmp_path / f"{which}.json")
        (tmp_path / f"{which}.json").write_text(json.dumps(dict(json.loads(
            (Path(__file__).resolve().parents[2] / f"sample_data/networks/{name}.json").read_text()), sampler=sampler)))
    fit = partial(_fit, corpus=group_corpus)
    run = fit(spark_session, blocks, tmp_path / "run", network)
    result, recount = run
    for name in ("nwk", "network_tc") + (("word_tables",) if which in ("pyp-lda", "pyp-lda-2", "hca", "hca-2",
                                                                       "pyp-lda-cmgs", "pyp-lda-exact", "hca-exact") else ()) + \
            (("word_chain",) if which in ("pyp-lda-2", "hca-2") else ()) + \
            (("word_col_n", "word_col_t", "word_tables") if which == "dtm" else ()) + \
            (("word_col_n", "word_col_t", "word_col_mid", "word_tables", "word_chain") if which == "pyp-lda-4"
             else ()) + (("word_mix",) if which == "pyp-lda-mix" else ()) + \
            (("network_tp",) if which in ("hdp-pyp-lda", "authors-pyp", "hca", "hca-2", "pyp-topics", "two-parents",
                                          "hdp-pyp-lda-cmgs", "hca-exact", "pyp-topics-exact") else ()) + \
            (("network_ts",) if which == "two-parents" else ()):
        np.testing.assert_array_equal(result.tables[name], recount[name], err_msg=name)
    assert result.tables["discount_counts"].equals(recount["discount_counts"])
    tc = result.tables["network_tc"]
    if which in ("pyp-lda", "pyp-lda-cmgs", "pyp-lda-exact"):   # the word side's tables: t_wk <= n_wk, and >= 1
        n, t = result.tables["nwk"], result.tables["word_tables"]     # but for rare races (repaired)
        assert result.hyper["word_pyp"].get("multiplicity") == (which.split("-")[-1] if "-" in which[4:] else None)
        assert np.all(t <= n) and (t < n).any() and ((n > 0) & (t == 0)).sum() <= (n > 0).sum() // 20
        assert result.hyper["a_values"]["phi.a"] != 0.5 and result.hyper["b_values"]["phi.b"] != 10.0
        np.testing.assert_allclose(result.topic_word.sum(axis=1), 1.0)
    elif which == "pyp-lda-2":    # phi[topic] <- nu (corpus PYP) <- uniform: t <= c at both levels (c_nu = sum_k t)
        n, t, tnu = result.tables["nwk"], result.tables["word_tables"], result.tables["word_chain"][:, 0]
        assert np.all(t <= n) and np.all(tnu <= t.sum(axis=1)) and (tnu < t.sum(axis=1)).any() and tnu.sum() > 0
        assert all(result.hyper[f"{k}_values"][f"{x}.{k}"] != v
                   for x in ("phi", "nu") for k, v in (("a", .5), ("b", 10)))
        np.testing.assert_allclose(result.topic_word.sum(axis=1), 1.0)
    elif which == "dtm":          # phi[topic, group] <- phi0[topic] <- uniform: t <= c at both levels
        bn, bt, t0 = (result.tables[k] for k in ("word_col_n", "word_col_t", "word_tables"))
        assert np.all(bt <= bn) and np.all(t0 <= bt.reshape(4, V, K).sum(axis=0)) and (bt < bn).any()
        np.testing.assert_array_equal(bn.reshape(4, V, K).sum(axis=0), result.tables["nwk"])
        assert all(result.hyper[f"{k}_values"][f"{x}.{k}"] != v
                   for x in ("phi", "phi0") for k, v in (("a", .4), ("b", 2)))
    elif which == "pyp-lda-4":    # phi <- phi1 <- phi2 (per topic) <- nu (corpus PYP) <- uniform: t <= c everywhere
        bn, bt, mid, t2, tnu = (result.tables[k] for k in ("word_col_n", "word_col_t", "word_col_mid", "word_tables",
                                                           "word_chain"))
        np.testing.assert_array_equal(bn, result.tables["nwk"])
        assert np.all(bt <= bn) and np.all(mid <= bt) and np.all(t2 <= mid) and np.all(tnu[:, 0] <= t2.sum(axis=1))
        assert (bt < bn).any() and (mid < bt).any() and tnu.sum() > 0
        assert all(result.hyper[f"{k}_values"][f"{x}.{k}"] != v
                   for x in ("phi", "phi1", "phi2", "nu") for k, v in (("a", .5), ("b", 10)))
        np.testing.assert_allclose(result.topic_word.sum(axis=1), 1.0)
    elif which == "pyp-lda-mix":  # phi[topic] over base[topic] and background mixed by rho: tables per edge
        n, s = result.tables["nwk"], result.tables["word_mix"].reshape(2, V, K)
        assert np.all(s.sum(axis=0) <= n) and (s.sum(axis=0) < n).any() and s[0].sum() > 0 and s[1].sum() > 0
        assert ((n > 0) & (s.sum(axis=0) == 0)).sum() <= (n > 0).sum() // 10     # (races, read as one table)
        assert result.hyper["a_values"]["phi.a"] != 0.5 and result.hyper["b_values"]["phi.b"] != 10.0
        np.testing.assert_allclose(result.topic_word.sum(axis=1), 1.0)
    elif which in ("hca", "hca-exact"):   # hdp-pyp-lda's topic side and pyp-lda's word side, both sides' tables
        n, t = result.tables["nwk"], result.tables["word_tables"]     # owned (exact: in multiplicity form)
        assert result.hyper["word_pyp"].get("multiplicity") == ("exact" if which == "hca-exact" else None)
        assert np.all(t <= n) and (t < n).any() and ((n > 0) & (t == 0)).sum() <= (n > 0).sum() // 20
        c, t = tc[1], result.tables["network_tp"][1]
        assert c.sum() >= 24 and np.all(t <= c) and np.array_equal(tc[0], t) and t.sum() > 0
        assert ((c > 0) & (t == 0)).sum() <= 1 and not result.tables["network_tp"][[0, 2]].any()
        start = {"corpus.a": 0.2, "phi.a": 0.5, "corpus.b": 10.0, "phi.b": 10.0, "theta.b": 1.0}
        assert all(result.hyper["a_values" if k.endswith(".a") else "b_values"][k] != v for k, v in start.items())
        np.testing.assert_allclose(result.topic_word.sum(axis=1), 1.0)
    elif which == "hca-2":        # hca's topic side beside pyp-lda-2's chain: t <= c at every level, both sides
        n, t, tnu = result.tables["nwk"], result.tables["word_tables"], result.tables["word_chain"][:, 0]
        assert np.all(t <= n) and np.all(tnu <= t.sum(axis=1)) and (t < n).any() and tnu.sum() > 0
        c, t = tc[1], result.tables["network_tp"][1]
        assert c.sum() >= 24 and np.all(t <= c) and np.array_equal(tc[0], t) and t.sum() > 0
        assert ((c > 0) & (t == 0)).sum() <= 1 and not result.tables["network_tp"][[0, 2]].any()
        start = {"corpus.a": 0.2, "corpus.b": 10.0, "theta.b": 1.0, "phi.a": 0.5, "phi.b": 10.0, "nu.a": 0.5,
                 "nu.b": 10.0}
        assert all(result.hyper["a_values" if k.endswith(".a") else "b_values"][k] != v for k, v in start.items())
        np.testing.assert_allclose(result.topic_word.sum(axis=1), 1.0)
    elif which in ("pyp-topics", "pyp-topics-exact"):   # the corpus vector's customers: every token (both
        # partitions'), its tables t <= c (exact: in multiplicity form, each partition's own)
        c, t = tc[1], result.tables["network_tp"][1]
        np.testing.assert_array_equal(c, result.tables["nwk"].sum(axis=0))
        assert np.all(t <= c) and np.array_equal(tc[0], t) and 0 < t.sum() < c.sum()
        assert result.hyper["a_values"]["corpus.a"] != 0.2 and result.hyper["b_values"]["corpus.b"] != 2.0
    elif which == "two-parents":  # corpus PYP over base and base2: its tables per edge are the roots' customers
        c, t, ts = tc[2], result.tables["network_tp"][2], result.tables["network_ts"]     # (rows: base, base2,
        assert ts.shape[0] == 2 * tc.shape[0] and np.all(t <= c) and t.sum() > 0         # corpus; 2 edges a row)
        np.testing.assert_array_equal(ts[4] + ts[5], t)
        np.testing.assert_array_equal(ts[4], tc[0])
        np.testing.assert_array_equal(ts[5], tc[1])
        assert ts[4].sum() > 0 and ts[5].sum() > 0 and result.hyper["a_values"]["corpus.a"] != 0.2
    elif which in ("hdp-pyp-lda", "hdp-pyp-lda-cmgs"):  # base <- corpus PYP <- documents: corpus' tables (each
        # partition's own, summed; under cmgs beside the documents' tables in multiplicity form)
        assert result.hyper["network"].get("sampler", "indicators") == ("cmgs" if "cmgs" in which else "indicators")
        c, t = tc[1], result.tables["network_tp"][1]    # are base's customers; t <= c, t = 0 only in a race
        assert c.sum() >= 24 and np.all(t <= c) and np.array_equal(tc[0], t) and not tc[2:].any()
        assert t.sum() > 0 and ((c > 0) & (t == 0)).sum() <= 1 and not result.tables["network_tp"][[0, 2]].any()
        assert result.hyper["a_values"]["corpus.a"] != 0.2 and result.hyper["b_values"]["corpus.b"] != 10.0
        assert result.hyper["b_values"]["theta.b"] != 1.0
    elif which == "hdp-lda":      # the corpus vector's customers: every document's tables, >= 1 per document
        assert tc[0].sum() >= 24 and not tc[1:].any()
        assert result.hyper["b_values"]["theta.b"] != 1.0
    elif which == "column":       # one root per group: its customers the tables of the group's 8 documents
        assert all(tc[g].sum() >= 8 for g in range(3)) and not tc[3:].any(), tc.sum(axis=1)
        assert result.hyper["b_values"]["theta.b"] != 1.0
    elif which == "authors":      # one root per author, its customers the tables its documents send it
        assert all(tc[a].sum() > 0 for a in range(4)) and not tc[4:].any(), tc.sum(axis=1)
        assert result.hyper["b_values"]["theta.b"] != 1.0
    elif which == "authors-pyp":  # base <- one Pitman-Yor vector per author (tables owned by partitions) <- documents
        c, t = tc[1:5], result.tables["network_tp"][1:5]
        assert all(c[a].sum() > 0 for a in range(4)) and np.all(t <= c) and np.array_equal(tc[0], t.sum(axis=0))
        assert result.hyper["a_values"]["author.a"] != 0.2 and result.hyper["b_values"]["author.b"] != 2.0
    elif which in ("seqlda", "seqlda-exact"):   # CMGS (the shipped spec's sampler) or exact: b moves, no
        assert result.hyper["network"]["sampler"] == ("exact" if which == "seqlda-exact" else "cmgs")  # corpus-
        assert result.hyper["b_values"]["b_seg"] != 10.0 and not tc.any()                                # level vector
    elif which == "adatm-cmgs":
        assert result.hyper["network"]["sampler"] == "cmgs" and not tc.any()
        assert result.hyper["b_values"]["seg.b"] != 10.0
    else:
        assert not tc.any()
        assert result.hyper["a_values"]["seg.a"] != 0.2 and result.hyper["b_values"]["seg.b"] != 2.0
        assert 0.0 <= result.hyper["a_values"]["seg.a"] < 1.0
    with pytest.raises(Interrupted):
        fit(spark_session, blocks, tmp_path / "ckpt", network, stop_after=3)
    assert_same_runs(fit(spark_session, blocks, tmp_path / "ckpt", network, resume=True), run)
    if which in ("pyp-lda", "hdp-pyp-lda", "pyp-lda-2", "hca", "hca-2", "dtm", "hdp-pyp-lda-cmgs",   # resident
                 "pyp-lda-cmgs", "pyp-lda-4", "pyp-lda-mix"):
        assert_same_runs(fit(spark_session, blocks, tmp_path / "resident", network, sync="resident"), run)


@pytest.mark.parametrize("which", ["pdp-seqlda-cmgs", "pdp-hdp-pyp", "pdp-pyp-lda-2", "pdp-hca", "pdp-burst",
                                   "pdp-hdp-pyp-cmgs", "pdp-pyp-lda-cmgs", "pdp-pyp-lda-4", "pdp-pyp-lda-mix"])
def test_seqlda_cmgs_is_the_same_on_local1(spark_session, tiny_corpora_of_kind, local1_models, tmp_path, which):
    """seqlda.json under ``--sampler cmgs`` (and hdp-pyp-lda.json: a corpus-level Pitman-Yor vector, its tables
    owned by partitions; pyp-lda-2.json: a chain of Pitman-Yor word vectors, likewise; hca.json: a shared Pitman-Yor
    topic vector and a Pitman-Yor word side; burst-lda.json: a word vector per topic per document) trained here
    (local[2]) and in the local[1] application (conftest
    ``local1_models``): the same topics and document rows bit for bit."""
    import pandas as pd

    from conftest import (PDP_BURST, PDP_HCA, PDP_HDP_PYP, PDP_HDP_PYP_CMGS, PDP_PYP_LDA_2, PDP_PYP_LDA_CMGS,
                          PDP_PYP_LDA_MIX, PDP_SEQLDA_CMGS, pdp_pyp_lda_4, train_args)
    from drivers import registry
    from drivers.store.model_store import load_model
    from jobs import train

    flags = {"pdp-seqlda-cmgs": PDP_SEQLDA_CMGS, "pdp-hdp-pyp": PDP_HDP_PYP, "pdp-pyp-lda-2": PDP_PYP_LDA_2,
             "pdp-hca": PDP_HCA, "pdp-burst": PDP_BURST, "pdp-hdp-pyp-cmgs": PDP_HDP_PYP_CMGS,
             "pdp-pyp-lda-cmgs": PDP_PYP_LDA_CMGS, "pdp-pyp-lda-mix": PDP_PYP_LDA_MIX,
             "pdp-pyp-lda-4": None}[which] or pdp_pyp_lda_4(tmp_path)
    train.train(spark_session, train_args(tiny_corpora_of_kind[registry.SEGMENTED], tmp_path / "m", *flags))
    other = local1_models / which
    np.testing.assert_array_equal(load_model(str(other)).lambda_, load_model(str(tmp_path / "m")).lambda_)
    theta = [np.stack(pd.read_parquet(d / "doc_topics.parquet").sort_values("doc_id")["theta"])
             for d in (other, tmp_path / "m")]
    np.testing.assert_array_equal(theta[0], theta[1])
    if which == "pdp-seqlda-cmgs":
        assert json.loads((tmp_path / "m" / "model.json").read_text())["hyper"]["network"]["sampler"] == "cmgs"
    elif which in ("pdp-hdp-pyp", "pdp-hdp-pyp-cmgs"):     # (cmgs: inference.pdpnet.cmgs_owned)
        assert np.load(other / "network_tp.npy").sum() > 0
        np.testing.assert_array_equal(np.load(other / "network_tp.npy"), np.load(tmp_path / "m" / "network_tp.npy"))


TLM_HDP_PYP = {"name": "tlm-hdp-pyp",   # tlm's word side under hdp-pyp-lda's topic side (both owned by partitions)
               "nodes": {**{k: v for k, v in json.loads((SHIPPED / "tlm.json").read_text())["nodes"].items()
                            if k != "alpha_m"},
                         **{k: v for k, v in json.loads((SHIPPED / "hdp-pyp-lda.json").read_text())["nodes"].items()
                            if k != "phi"}},
               "topic": {"node": "theta", "index": ["document"]},
               "word": {"node": "phi", "index": ["topic", "previous_word"]}}


@pytest.mark.parametrize("which", ["tlm", "tlm-hdp-pyp"])
def test_bigram_word_side_tables_are_the_recount_and_resume_is_the_same_chain(spark_session, blocks, tmp_path,
                                                                               which):
    """tlm.json on two partitions (the blocks' token order is the text order): the keyed customers and indicators
    the reducers sum equal a recount of the final states, 0 < t <= n in every occupied cell but rare races, the
    word side's b moves (driver's step on the global cells), and the interrupted run resumed is the same chain;
    likewise under a corpus-level Pitman-Yor topic vector (its tables the recount too, t <= c)."""
    from drivers.models.pdp_network import words_bigram
    network = which
    if which != "tlm":
        network = str(tmp_path / f"{which}.json")
        (tmp_path / f"{which}.json").write_text(json.dumps(TLM_HDP_PYP))
    run = _fit(spark_session, blocks, tmp_path / "run", network)
    result, recount = run
    for name in ("nwk", words_bigram.CUSTOMERS, words_bigram.TABLES):
        table = result.tables[name]
        assert (np.array_equal(table, recount[name]) if isinstance(table, np.ndarray)
                else table.equals(recount[name])), name
    der = PdpNetwork(K, V).derive(result.tables)
    n, t, race = der["bigram_n"], der["bigram_t"], der["bigram_race"]
    assert n.sum() == result.tables["nwk"].sum() and np.all(t <= n) and race.sum() <= len(n) // 20
    assert (t < n).any() and der["bigram_ctx"].shape[0] > K
    assert result.hyper["b_values"]["phi.b"] != 100.0 and result.hyper["word_pyp"]["bigram"]
    np.testing.assert_allclose(result.topic_word.sum(axis=1), 1.0)
    if which != "tlm":
        np.testing.assert_array_equal(result.tables["network_tp"], recount["network_tp"])
        c, t = result.tables["network_tc"][1], result.tables["network_tp"][1]
        assert c.sum() >= 24 and np.all(t <= c) and t.sum() > 0 and result.hyper["b_values"]["corpus.b"] != 10.0
    with pytest.raises(Interrupted):
        _fit(spark_session, blocks, tmp_path / "ckpt", network, stop_after=3)
    assert_same_runs(_fit(spark_session, blocks, tmp_path / "ckpt", network, resume=True), run)
