"""spark-topics refresh of the variational families beyond lda (issue 30, 2): polylda (each language's vocabulary
grows), tlda and ptlda (the dictionary tree grows with the vocabulary), on a small aligned sample of
sample_data/bible_en_es.jsonl.gz: published versions read back (topics, infer), the update equations over the
grown structures, cross-language retrieval (precision@1) not falling after refreshes, a batch of the base's own
documents continuing finitely, kills at the publication steps leaving the root readable."""
from __future__ import annotations

import gzip
import json
import os
import shutil
import zlib

import numpy as np
import pandas as pd
import pytest
from scipy.special import digamma

from conftest import SAMPLE_DATA, train_args
from shared_runs import made_once, run_folder
from drivers.corpora.aligned import word_columns
from drivers.corpora import in_process as local_corpus
from drivers.families.variational.infer import exp_elogbeta, infer_task
from drivers.models.tree.growth import carry_statistics
from inference.tree_layout import TreeLayout
from drivers.preparation.aligned import prepare_aligned
from drivers.store import model_root, model_store, publish
from drivers.store.topic_model import TopicModel, WeightsModel
from inference.errors import RefusedError
from inference.mapper import EStepSettings
from inference.retrieval import retrieval_scores
from jobs import refresh, train
from test_refresh import Killed, _raise, args, run

LANGS = ("en", "es")
WORDS_PER_TEXT = 80
#: how far precision@1 may fall after a refresh: 3 of the ~110 held-out tuples
FALL = 0.03
#: true translations of frequent words of the sample (the tree's concepts)
PAIRS = [("god", "dios"), ("king", "rey"), ("land", "tierra"), ("house", "casa"), ("father", "padre"),
         ("people", "pueblo"), ("city", "ciudad"), ("day", "día"), ("son", "hijo"), ("sons", "hijos"),
         ("children", "hijos"), ("brothers", "hermanos"), ("water", "aguas"), ("hand", "mano"),
         ("heart", "corazón"), ("name", "nombre"), ("sword", "espada"), ("gold", "oro"), ("priest", "sacerdote"),
         ("altar", "altar"), ("mountain", "monte"), ("fire", "fuego"), ("blood", "sangre"), ("bread", "pan")]


def _bucket(doc_id: str) -> int:
    return zlib.crc32(doc_id.encode()) % 10


def _write(path, rows):
    with open(path, "w") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    return str(path)


@pytest.fixture(scope="module")
def aligned(spark_session, tmp_path_factory):
    """The sample's tuples (texts cut to their first words) split by a hash of the id: base 40%, two batches of
    20%, a held-out 20% (prepared with the base model's vocabularies, for retrieval); a polylda base model (K=6)
    and a tree from a TSV dictionary of true translations plus pairs that link words first seen in batch 1. Made
    once per test run (both pytest-xdist workers read it, tests/shared_runs.py); tests write elsewhere."""
    base = run_folder(tmp_path_factory) / "refresh_families"
    with made_once(base) as make:
        if make:
            _make_aligned(spark_session, base)
    return json.loads((base / "aligned.json").read_text()) | {"dir": base}


def _make_aligned(spark_session, base):
    if base.exists():
        shutil.rmtree(base)                      # a make that failed half way
    base.mkdir()
    rows = [json.loads(line) for line in gzip.open(os.path.join(SAMPLE_DATA, "bible_en_es.jsonl.gz"), "rt")]
    for r in rows:
        r["text"] = " ".join(r["text"].split()[:WORDS_PER_TEXT])
    parts = {"base": [0, 1, 2, 3], "b1": [4, 5], "b2": [6, 7], "heldout": [8, 9]}
    files = {name: _write(base / f"{name}.jsonl", [r for r in rows if _bucket(r["id"]) in buckets])
             for name, buckets in parts.items()}
    prepare_aligned(spark_session, files["base"], str(base / "c0"), "lang")
    train.train(spark_session, train_args(base / "c0", base / "poly0", "--model", "polylda", "--topics", 6,
                                          "--iterations", 8, "--seed", 1))
    prepare_aligned(spark_session, files["heldout"], str(base / "heldout"), "lang", vocab=str(base / "poly0"))
    # words of batch 1 the base does not know, frequent enough to enter (df >= 3), to be linked by the tree
    from drivers.preparation.text import stopword_list

    known = {l: set(model_store.read_parquet(str(base / "c0" / l / "vocab.parquet"))["term"])
             | set(stopword_list({"en": "english", "es": "spanish"}[l])) for l in LANGS}
    df = {l: {} for l in LANGS}
    for r in (json.loads(line) for line in open(files["b1"])):
        for w in {t.strip(".,;:!?\"()[]¿¡«»") for t in r["text"].lower().split()}:
            if w.isalpha() and len(w) > 3 and w not in known[r["lang"]]:
                df[r["lang"]][w] = df[r["lang"]].get(w, 0) + 1
    new = {l: sorted((w for w, n in df[l].items() if n >= 4), key=lambda w: (-df[l][w], w))[:2] for l in LANGS}
    pairs = PAIRS + [("lord", new["es"][0]), (new["en"][0], new["es"][1])]   # an old word linked to a new one; two new
    dictionary = base / "en-es.tsv"
    dictionary.write_text("".join(f"en\t{a}\tes\t{b}\n" for a, b in pairs))
    from jobs import tree
    tree.build(spark_session, [str(dictionary)], str(base / "c0"), str(base / "tree"))
    (base / "aligned.json").write_text(json.dumps({"files": files, "new": new, "pairs": [list(p) for p in pairs]}))


def retrieval(model_dir: str, heldout: str) -> tuple[float, float]:
    """(mean precision@1, chance) of of en->es and es->en on the held-out tuples, each language's theta folded in with the
    model's topics renormalised over the base vocabulary (the held-out corpus': one vocabulary for every version).
    The fold-in is ``infer``'s Spark task run in this process over the Spark job's blocks (each document's theta is
    fitted alone: the numbers of the job)."""
    model = model_store.load_model(model_dir)
    thetas = {}
    for language in LANGS:
        corpus = local_corpus.load_corpus(os.path.join(heldout, language), 2)
        V = corpus.vocab_size
        view = model.language_view(language)
        meta = dict(view.meta, vocab_size=V)
        if isinstance(view, WeightsModel):
            view = WeightsModel(view.directory, meta, view.vocab.iloc[:V].copy(), view.lambda_[:, :V],
                                view.topic_word_matrix[:, :V])
        else:
            view = TopicModel(view.directory, meta, view.vocab.iloc[:V].copy(), view.lambda_[:, :V])
        assert view.vocab["term"].tolist() == corpus.vocab["term"].tolist()
        params = local_corpus.Shared((exp_elogbeta(view), view.alpha))
        thetas[language] = {doc_id: np.asarray(theta) for doc_id, _, theta
                            in infer_task(corpus.blocks, bc_params=params, options=EStepSettings())}
    ids = sorted(set(thetas["en"]) & set(thetas["es"]))
    a, b = (np.stack([thetas[l][i] for i in ids]) for l in LANGS)
    assert len(ids) > 50
    return (retrieval_scores(a, b)["precision_at_1"] + retrieval_scores(b, a)["precision_at_1"]) / 2, 1.0 / len(ids)


def _infer(spark, root, tmp_path, input_file):
    """``infer`` with the root's LATEST on aligned tuples prepared with its vocabularies: finite proportions."""
    from drivers import registry
    from drivers.families import InferRequest

    model = model_store.load_model(str(root))
    out = tmp_path / "inferred"
    corpus = tmp_path / "to_infer"
    prepare_aligned(spark, input_file, str(corpus), "lang", vocab=model.directory, overwrite=True)
    request = InferRequest(model_dir=str(root), input=str(corpus), output=str(out))
    registry.of_meta(model.meta).family_object().infer(spark, model, str(corpus), request)
    doc_topics = pd.read_parquet(out / "doc_topics.parquet")
    assert len(doc_topics) > 10 and np.isfinite(np.stack(doc_topics["theta"])).all()
    return doc_topics


@pytest.fixture(scope="module")
def poly_root(spark_session, aligned, tmp_path_factory):
    """A root of the polylda base refreshed once with batch 1 (--mode auto, the default: it accumulates); tests that
    refresh it further work on a copy."""
    root = aligned["dir"] / "poly_root"
    with made_once(root) as make:
        if make:
            shutil.rmtree(root, ignore_errors=True)
            report = run(spark_session, "--model", root, "--base", aligned["dir"] / "poly0", "--input",
                         aligned["files"]["b1"], "--iterations", 2)
            (root.parent / "poly_root.json").write_text(json.dumps(report))
    return root, json.loads((root.parent / "poly_root.json").read_text())


def test_polylda_refreshes_grow_each_language_keep_retrieval_and_survive_kills(spark_session, aligned, poly_root,
                                                                              tmp_path, monkeypatch):
    """Two refreshes with --mode auto (the default): the first accumulates (lambda = the old lambda carried to the
    grown vocabularies + the batch's expected counts, exactly), the second runs the guided pass over the aligned
    union (the documents ingested doubled); every language's vocabulary grows with its own words (old words keep
    their local ids); versions read back (topics, infer); retrieval precision@1 does not fall. Before the second:
    a batch with no Spanish document is refused in one line, nothing published; a refresh (accumulate,
    --reinfer-old) killed during the model write, then one killed between the version's rename and LATEST, leave
    LATEST at the previous complete version, readable (the version the second killed run wrote stays unpublished:
    its --reinfer-old inferred every tuple ingested so far); the next run (the second refresh) completes, each
    tuple once."""
    d, files = aligned["dir"], aligned["files"]
    root = tmp_path / "root"
    shutil.copytree(poly_root[0], root)
    first = poly_root[1]
    base = model_store.load_model(str(d / "poly0"))
    assert first["mode"] == "accumulate" and first["vocabulary"]["added"] > 0
    v1 = model_store.load_model(str(root))
    documents = v1.meta["refresh"]["documents"]
    assert v1.languages == list(LANGS) and documents == base.meta["data"]["documents"] + first["ingested"]
    for language in LANGS:                   # each language grows at its end; its old words keep their local ids
        old, new = base.language_view(language).vocab, v1.language_view(language).vocab
        assert new["term"].tolist()[:len(old)] == old["term"].tolist() and len(new) > len(old)
        added = set(new["term"].tolist()[len(old):])
        assert set(aligned["new"][language]) <= added
    # streaming VB over the grown per-language layout: lambda_v1 - (lambda_old carried, new words at eta) = the
    # batch's expected counts, which sum to its tokens
    eta = float(base.meta["eta"])
    carried = np.full_like(v1.lambda_, eta)
    carried[:, word_columns(base.vocab, v1.vocab)] = base.lambda_
    tokens = json.load(open(os.path.join(model_store.resolve(str(root)), "corpus", "corpus.json")))["tokens"]
    assert (v1.lambda_ - carried).min() > -1e-9 and (v1.lambda_ - carried).sum() == pytest.approx(tokens, rel=1e-9)
    assert first["drift"]["identity_matching"] and len(first["drift"]["hellinger"]) == 6

    english = _write(tmp_path / "en.jsonl", [json.loads(line) for line in open(files["b2"])
                                             if json.loads(line)["lang"] == "en"])
    with pytest.raises(RefusedError, match="no document in es, a language of the model"):
        run(spark_session, "--model", root, "--input", english)
    for step in ("model-written", "version-moved"):
        monkeypatch.setattr(publish, "STEP_HOOK", lambda name, step=step: _raise(Killed) if name == step else None)
        with pytest.raises(Killed):
            run(spark_session, "--model", root, "--input", files["b2"], "--iterations", 1, "--mode", "accumulate",
                "--reinfer-old")
        monkeypatch.setattr(publish, "STEP_HOOK", None)
        assert model_root.latest(str(root)) == first["version"], step
        assert model_store.load_model(str(root)).meta["refresh"]["documents"] == documents, step
    # the version the run killed after its rename wrote, complete but not published: --reinfer-old inferred every
    # tuple ingested so far (the aligned union of the base corpus and the batches)
    unpublished = [v for v in model_root.versions(str(root)) if v not in model_root.chain(str(root))]
    assert len(unpublished) == 1
    killed = model_root.version_dir(str(root), unpublished[0])
    report = json.load(open(os.path.join(killed, "refresh.json")))
    assert report["reinferred"] == documents + report["ingested"] == len(pd.read_parquet(
        os.path.join(killed, "doc_topics.parquet")))
    assert report["documents"]["new"] == report["ingested"] > 50

    second = run(spark_session, "--model", root, "--input", files["b2"], "--iterations", 2, "--guided-iterations", 4,
                 "--guided-growth", 1.2)
    assert second["mode"] == "batch" and "documents ingested >=" in second["schedule"]["reason"]
    chain = model_root.chain(str(root))
    assert chain[:2] == [second["version"], first["version"]] and second["documents"]["new"] == second["ingested"] > 50
    ledgers = pd.concat([model_store.read_parquet(os.path.join(model_root.version_dir(str(root), v),
                                                               "ledger.parquet")) for v in chain])
    assert ledgers.doc_id.is_unique
    assert [n for n in os.listdir(root / "versions") if n.startswith(".")] == []
    v2 = model_store.load_model(str(root))
    assert v2.meta["refresh"]["documents"] == documents + second["ingested"]
    assert v2.meta["refresh"]["guided_documents"] == v2.meta["refresh"]["documents"]
    assert len(pd.read_parquet(os.path.join(model_store.resolve(str(root)), "doc_topics.parquet"))) == \
        v2.meta["refresh"]["documents"]                           # the guided pass inferred every tuple
    assert all(len(v2.language_view(l).vocab) >= len(v1.language_view(l).vocab) for l in LANGS)
    assert len(open(os.path.join(model_store.resolve(str(root)), "topics.txt")).read().splitlines()) >= 6
    _infer(spark_session, root, tmp_path, aligned["files"]["heldout"])
    drift = refresh.drift_report(refresh.request_from(args("--model", root, "--drift-report", tmp_path / "drift")))
    assert len(drift["versions"]) == 3 and (tmp_path / "drift" / "drift.png").exists()
    entered = {w["term"] for words in drift["new_words"] for w in words}
    added = set(pd.concat([pd.read_parquet(os.path.join(model_root.version_dir(str(root), v), "new_terms.parquet"))
                           for v in drift["versions"][1:]])["term"])
    assert entered and entered <= added                    # the words after the base, each language's regrouped
    scores = [retrieval(path, str(d / "heldout"))
              for path in (str(d / "poly0"), model_root.version_dir(str(root), first["version"]), str(root))]
    chance = scores[0][1]
    scores = [score for score, _ in scores]
    print("polylda retrieval precision@1 (base, refresh 1, refresh 2; chance %.3f):" % chance, scores)
    assert scores[0] > 8 * chance and min(scores[1:]) >= scores[0] - FALL, scores


@pytest.fixture(scope="module")
def ptlda_base(spark_session, aligned):
    """The ptlda base model (K=6) on the aligned base corpus and its tree; made once per test run, read only."""
    d = aligned["dir"]
    with made_once(d / "pt0") as make:
        if make:
            shutil.rmtree(d / "pt0", ignore_errors=True)
            train.train(spark_session, train_args(d / "c0", d / "pt0", "--model", "ptlda", "--tree", d / "tree",
                                                  "--topics", 6, "--iterations", 8, "--seed", 1))
    return d / "pt0"


def test_ptlda_refresh_grows_the_tree_and_keeps_retrieval(spark_session, aligned, ptlda_base, tmp_path):
    """The dictionary's pairs whose words entered the vocabulary become concepts (an old word gains a path to a new
    word's; two new words get a concept of their own); other new words hang from the root; lambda is the carried
    lambda plus the batch's counts; online is refused in one line; retrieval precision@1 does not fall."""
    d, files, new = aligned["dir"], aligned["files"], aligned["new"]
    root = tmp_path / "root"
    with pytest.raises(RefusedError, match=r"--mode online is not supported for --model ptlda \(it supports: "
                                           r"accumulate, batch\)"):
        run(spark_session, "--model", root, "--base", ptlda_base, "--input", files["b1"], "--mode", "online")
    base = model_store.load_model(str(ptlda_base))
    first = run(spark_session, "--model", root, "--base", ptlda_base, "--input", files["b1"], "--iterations", 2)
    v1 = model_store.load_model(str(root))
    concepts = {(v1.vocab["term"][a], v1.vocab["term"][b]) for a, b in v1.concepts}
    known = {l: set(v1.language_view(l).vocab["term"]) for l in LANGS}
    assert concepts == {(a, b) for a, b in aligned["pairs"] if a in known["en"] and b in known["es"]}
    assert ("lord", new["es"][0]) in concepts and (new["en"][0], new["es"][1]) in concepts
    assert len(concepts) >= base.layout.num_concepts + 2 and len(concepts) == v1.meta["tree"]["concepts"]
    assert v1.meta["tree"]["refresh"] == {"concepts_before": base.layout.num_concepts, "dictionaries":
                                          [str(d / "en-es.tsv")], "concepts_after": len(concepts)}
    tree = v1.layout
    new_ids = np.setdiff1d(np.arange(len(v1.vocab)), word_columns(base.vocab, v1.vocab))
    unlinked = np.setdiff1d(new_ids, v1.concepts.ravel())
    assert len(unlinked) > 0 and np.isin(unlinked, tree.root_words).all()      # the tree's fallback: the root
    eta, link = float(base.meta["eta"]), float(base.meta["tree"]["link_strength"])
    carried = carry_statistics(base.layout, base.lambda_, base.layout.edge_priors(eta, link), tree,
                               tree.edge_priors(eta, link),
                               word_columns(base.vocab, v1.vocab))
    R = tree.num_root_children - tree.num_concepts
    tokens = json.load(open(os.path.join(model_store.resolve(str(root)), "corpus", "corpus.json")))["tokens"]
    counts = v1.lambda_ - carried
    assert counts.min() > -1e-9
    # every token's count is on its path's last edge (a root word's, or a concept's leaf edge)
    assert counts[:, :R].sum() + counts[:, tree.num_root_children:].sum() == pytest.approx(tokens, rel=1e-9)
    assert np.isfinite(tree.dirichlet_expectation(v1.lambda_)).all()
    second = run(spark_session, "--model", root, "--input", files["b2"], "--iterations", 2, "--guided-iterations", 4,
                 "--guided-growth", 1.2)
    assert second["mode"] == "batch"
    _infer(spark_session, root, tmp_path, files["heldout"])
    scores = [retrieval(path, str(d / "heldout"))
              for path in (str(ptlda_base), model_root.version_dir(str(root), first["version"]), str(root))]
    chance = scores[0][1]
    scores = [score for score, _ in scores]
    print("ptlda retrieval precision@1 (base, refresh 1, refresh 2; chance %.3f):" % chance, scores)
    assert scores[0] > 8 * chance and min(scores[1:]) >= scores[0] - FALL, scores


def test_a_batch_of_the_base_documents_again_continues_finitely(spark_session, aligned, ptlda_base, tmp_path):
    """The base's own tuples under new ids (issue 24, 1: ptlda's NaN class): the counts double, every parameter and
    the tree's log word weights stay finite, the topics stay where they were (each matched to itself)."""
    rows = [json.loads(line) for line in open(aligned["files"]["base"])]
    again = _write(tmp_path / "again.jsonl", [dict(r, id="again-" + r["id"]) for r in rows])
    report = run(spark_session, "--model", tmp_path / "root", "--base", ptlda_base, "--input", again,
                 "--iterations", 4, "--mode", "accumulate")
    model = model_store.load_model(str(tmp_path / "root"))
    assert report["vocabulary"]["added"] == 0 and np.isfinite(model.lambda_).all()
    assert np.isfinite(model.layout.log_word_values(model.layout.dirichlet_expectation_edges(model.lambda_))).all()
    assert report["drift"]["identity_matching"] and report["drift"]["max"] < 0.5, report["drift"]
    assert np.isfinite(report["elbo"])


def test_tlda_on_aligned_documents_refreshes_each_language_document_apart(spark_session, aligned, tmp_path):
    """tlda trained on an aligned corpus keeps each language's document apart (<id>@<lang>): so does its ledger."""
    d = aligned["dir"]
    train.train(spark_session, train_args(d / "c0", tmp_path / "t0", "--model", "tlda", "--tree", d / "tree",
                                          "--topics", 4, "--iterations", 3, "--seed", 2))
    report = run(spark_session, "--model", tmp_path / "root", "--base", tmp_path / "t0", "--input",
                 aligned["files"]["b1"], "--iterations", 2)
    version = model_store.resolve(str(tmp_path / "root"))
    ledger = model_store.read_parquet(os.path.join(version, "ledger.parquet"))
    assert ledger.doc_id.str.endswith(("@en", "@es")).all() and len(ledger) == report["ingested"] == \
        len(pd.read_parquet(os.path.join(version, "doc_topics.parquet")))
    assert model_store.load_model(str(tmp_path / "root")).meta["tree"]["concepts"] > 0


def test_carrying_a_tree_lambda_keeps_every_path_count():
    """carry_statistics against a direct count: the old paths keep their counts exactly, a root word that gains a
    concept splits its count evenly over its new paths, new words and new paths start at their prior; the
    lambda of a tree that did not change is the old lambda."""
    rng = np.random.default_rng(0)
    old = TreeLayout(6, np.array([[0, 3], [1, 4]]), ("en", "es"), (0, 3, 6))       # word 2 and 5 at the root
    eta, link, K = 0.1, 50.0, 3
    lam_old = old.edge_priors(eta, link) + rng.gamma(1.0, 2.0, size=(K, old.parameter_size))
    # consistent concept edges (a concept's edge carries its leaves' counts, as the reducer forms it)
    beta_old = old.edge_priors(eta, link)
    R, C = 2, 2
    leaves = (lam_old - beta_old)[:, R + C:].reshape(K, C, 2)
    lam_old[:, R:R + C] = beta_old[R:R + C] + leaves.sum(axis=2)
    assert np.allclose(carry_statistics(old, lam_old, beta_old, old, beta_old, np.arange(6)), lam_old)
    # grown: en gets word 3 (new), es word 7 (new); word 2 (old, root) is linked to new word 7; old ids shift
    columns = np.array([0, 1, 2, 4, 5, 6])                 # old es words 3, 4, 5 -> 4, 5, 6
    new = TreeLayout(8, np.array([[0, 4], [1, 5], [2, 7]]), ("en", "es"), (0, 4, 8))
    beta_new = new.edge_priors(eta, link)
    lam = carry_statistics(old, lam_old, beta_old, new, beta_new, columns)
    counts_old, counts_new = lam_old - beta_old, lam - beta_new
    # old concept paths: leaves of concepts 0, 1 kept
    Rn, Cn = new.num_root_children - new.num_concepts, new.num_concepts
    assert np.allclose(counts_new[:, Rn + Cn:Rn + Cn + 4], counts_old[:, R + C:])
    # word 2 was a root word (root position 0 in the old tree): its count is now on concept 2's leaf 0
    assert np.allclose(counts_new[:, Rn + Cn + 4], counts_old[:, 0]) and np.allclose(counts_new[:, Rn + Cn + 5], 0)
    # word 5 (old root position 1) -> new id 6, still at the root; new word 3 at the root with its prior only
    position = {int(w): i for i, w in enumerate(new.root_words)}
    assert np.allclose(counts_new[:, position[6]], counts_old[:, 1]) and np.allclose(counts_new[:, position[3]], 0)
    # the concept edges carry their leaves' counts; the total count is kept
    assert np.allclose(counts_new[:, Rn:Rn + Cn], counts_new[:, Rn + Cn:].reshape(K, Cn, 2).sum(axis=2))
    assert np.allclose(counts_new[:, :Rn].sum(1) + counts_new[:, Rn + Cn:].sum(1),
                       counts_old[:, :R].sum(1) + counts_old[:, R + C:].sum(1))
    assert np.isfinite(digamma(lam)).all()
