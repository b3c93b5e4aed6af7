"""``spark-topics browse``: the site of an lda and of a segmented Gibbs model (stm) trained on the tiny corpora,
checked as data (the numbers are the model's) and in a real headless Chromium (Debian's ``chromium``, driven over
the DevTools protocol: tests/headless_browser.py): every topic renders, no console error, the relevance slider
re-ranks a topic's words as Sievert & Shirley's relevance does, ``#topic-k`` opens topic k, a related topic's
link opens it, an edited label survives a reload."""
from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pandas as pd
import pytest

from conftest import train_args
from drivers.browse.build import build
from drivers.store.model_store import load_model
from headless_browser import Browser, chromium
from inference import topic_map
from inference.errors import UsageError
from jobs import cli, train
from prerequisites import require

MODELS = ("lda", "stm")


@pytest.fixture(scope="module")
def sites(tiny_models, tmp_path_factory):
    """name -> (model directory, site directory) of lda and stm on the tiny segmented corpus."""
    root = tmp_path_factory.mktemp("browse")
    out = {}
    for name in MODELS:
        model_dir = tiny_models[name]
        site = str(root / f"site-{name}")
        assert cli.main(["browse", "--model-dir", model_dir, "--output", site]) == 0
        out[name] = model_dir, site
    return out


def read_script_json(path: str, prefix: str, suffix: str):
    text = open(path, encoding="utf-8").read().strip()
    assert text.startswith(prefix) and text.endswith(suffix), path
    return json.loads(text[len(prefix):-len(suffix)])


def site_summary(site: str) -> dict:
    return read_script_json(os.path.join(site, "data", "model.js"), "window.SPARK_TOPICS_MODEL = ", ";")


def site_topic(site: str, k: int) -> dict:
    return read_script_json(os.path.join(site, "data", "topics", f"{k}.js"), "SPARK_TOPICS_TOPIC(", ");")


@pytest.mark.parametrize("name", MODELS)
def test_site_holds_the_models_numbers(sites, name):
    model_dir, site = sites[name]
    model = load_model(model_dir)
    K = model.num_topics
    summary = site_summary(site)
    assert summary["card"]["model"] == name and summary["card"]["topics"] == K
    assert summary["card"]["documents"] == 40 and summary["card"]["trace"]["values"]
    assert sorted(os.listdir(os.path.join(site, "data", "topics"))) == sorted(f"{k}.js" for k in range(K))
    docs = pd.read_parquet(os.path.join(model_dir, "doc_topics.parquet"))
    theta = np.stack(docs["theta"].to_numpy())
    corpus = pd.read_parquet(os.path.join(model.meta["data"]["corpus"], "docs.parquet")).set_index("doc_id")
    shares = topic_map.topic_shares(theta, corpus.loc[docs["doc_id"], "n_tokens"].to_numpy())
    np.testing.assert_allclose([t["share"] for t in summary["topics"]], shares, rtol=1e-9)
    phi = model.topic_word()
    p_w = shares @ phi
    for k in range(K):
        record = site_topic(site, k)
        assert record["k"] == k
        ranked = np.lexsort((docs["doc_id"].to_numpy(), -theta[:, k]))[:10]
        assert [d["id"] for d in record["docs"]] == docs["doc_id"].to_numpy()[ranked].tolist()
        assert all(d["snippet"][""] for d in record["docs"])            # the segmented corpus: words in order
        first = record["docs"][0]["id"]
        assert record["docs"][0]["snippet"][""].split()[0] == model.vocab["term"][
            pd.read_parquet(os.path.join(model.meta["data"]["corpus"], "segments.parquet")).set_index("doc_id")
            .loc[first, "segments"][0][0]]
        panel = record["panels"][0]
        ids = model.vocab.set_index("term").loc[panel["terms"], "id"].to_numpy()
        np.testing.assert_allclose(panel["log_phi"], np.log(phi[k, ids]), atol=1e-5)
        np.testing.assert_allclose(panel["log_lift"], np.log(phi[k, ids] / p_w[ids]), atol=1e-5)
        assert [j for j, _ in record["related"]] == [j for j in np.argsort(
            topic_map.js_divergences(phi)[k], kind="stable") if j != k]
        assert summary["topics"][k]["coherence"][""] is not None
    if name == "stm":       # 3 segments per document: the topic flow, and each top document's segments
        assert summary["views"] == ["segments"]
        flow = site_topic(site, 0)["flow"]
        seg = pd.read_parquet(os.path.join(model_dir, "segment_topics.parquet"))
        seg_theta = np.stack(seg["theta"].to_numpy())
        expected = [seg_theta[seg["segment"].to_numpy() == s, 0].mean() for s in range(3)]
        np.testing.assert_allclose(flow["mean"], expected, atol=1e-5)
        assert flow["segments"] == [40, 40, 40] and len(flow["docs"]) == 10
    else:
        assert summary["views"] == []


def browser_ranking(b: Browser, k: int) -> list:
    return b.evaluate(f"[...document.querySelectorAll('ol.words[data-topic=\"{k}\"] li')].map(l => l.dataset.term)")


def set_lambda(b: Browser, value: float) -> None:
    b.evaluate(f"var s = document.getElementById('lambda'); s.value = {value}; s.dispatchEvent(new Event('input'))")


@pytest.mark.parametrize("name", MODELS)
def test_page_in_headless_chromium(sites, name):
    require(chromium() is not None, "Debian's chromium (headless browser)")
    model_dir, site = sites[name]
    model = load_model(model_dir)
    K, url = model.num_topics, "file://" + os.path.join(site, "index.html")
    with Browser() as b:
        b.open(url)
        assert b.evaluate("document.querySelectorAll('section.topic[data-topic]').length") == K
        assert b.evaluate("document.querySelectorAll('#map circle[data-topic]').length") == K
        for k in range(K):                                  # every topic opens and renders its words and documents
            b.evaluate(f"location.hash = 'topic-{k}'")
            b.wait_for(f"document.querySelectorAll('ol.words[data-topic=\"{k}\"] li').length > 0")
            assert len(browser_ranking(b, k)) == min(30, len(model.vocab))
            assert b.evaluate(f"document.querySelectorAll('#topic-{k} table.docs tr').length") == 10
        # the slider re-ranks: at every lambda the page's order is relevance's (ties: the page keeps term order)
        record = site_topic(site, 1)
        panel = record["panels"][0]
        rankings = {}
        for lam in (0.0, 0.35, 1.0):
            set_lambda(b, lam)
            score = lam * np.asarray(panel["log_phi"]) + (1 - lam) * np.asarray(panel["log_lift"])
            expected = [panel["terms"][i] for i in np.lexsort((np.arange(len(score)), -score))[:30]]
            rankings[lam] = browser_ranking(b, 1)
            assert rankings[lam] == expected, lam
        assert rankings[0.0] != rankings[1.0]
        # the filter box keeps the topics among whose top words (or label, or #k) the text occurs
        summary = site_summary(site)
        word = summary["topics"][0]["top"].split()[0]
        b.evaluate(f"var f = document.getElementById('filter'); f.value = '{word}';"
                   "f.dispatchEvent(new Event('input'))")
        shown = b.evaluate("[...document.querySelectorAll('section.topic:not(.hidden)')]"
                           ".map(s => Number(s.dataset.topic))")
        assert shown == [t["k"] for t in summary["topics"] if word in t["top"]] and 0 in shown
        b.evaluate("var f = document.getElementById('filter'); f.value = ''; f.dispatchEvent(new Event('input'))")
        assert b.evaluate("document.querySelectorAll('section.topic.hidden').length") == 0
        # a related topic's link opens that topic
        related = record["related"][0][0]
        b.evaluate(f"document.querySelector('#topic-1 a[data-related=\"{related}\"]').click()")
        b.wait_for(f"document.querySelector('ol.words[data-topic=\"{related}\"]') !== null")
        assert b.evaluate("location.hash") == f"#topic-{related}"
        # an edited label is kept (localStorage) across a reload
        b.evaluate("var i = document.querySelector('#topic-0 input.label'); i.value = 'my label';"
                   "i.dispatchEvent(new Event('input'))")
        b.open("about:blank", ready="location.href === 'about:blank'")       # leave the page: a new load
        assert b.evaluate("window.SPARK_TOPICS_READY === undefined")
        b.open(url + f"#topic-{K - 1}")                     # a #topic-k link opens topic k, scrolled to
        assert b.evaluate("document.querySelector('#topic-0 input.label').value") == "my label"
        # the labels download as CSV and JSON (the files the buttons hand to the browser)
        b.evaluate("window.__saved = []; URL.createObjectURL = function (blob) { window.__saved.push(blob); "
                   "return 'data:,'; }")
        b.evaluate("document.getElementById('download-csv').click(); document.getElementById('download-json').click()")
        csv_text, json_text = b.evaluate("Promise.all(window.__saved.map(b => b.text()))")
        summary = site_summary(site)
        assert csv_text.splitlines() == ["topic,label,top_words"] + [
            f"{t['k']},{'my label' if t['k'] == 0 else ''},{t['label']}" for t in summary["topics"]]
        assert json.loads(json_text) == [{"topic": t["k"], "label": "my label" if t["k"] == 0 else None,
                                          "top_words": t["label"]} for t in summary["topics"]]
        b.wait_for(f"document.querySelector('ol.words[data-topic=\"{K - 1}\"]') !== null")
        assert b.evaluate(f"document.getElementById('topic-{K - 1}').classList.contains('open')")
        assert b.evaluate(f"Math.abs(document.getElementById('topic-{K - 1}').getBoundingClientRect().top) < 200")
        if name == "stm":
            assert b.evaluate(f"document.querySelectorAll('#topic-{K - 1} svg.flow rect').length") == 3
        b.pump(0.2)
        assert b.errors() == []


def test_browse_refuses_to_write_over_a_model(sites):
    model_dir, _ = sites["lda"]
    with pytest.raises(UsageError, match="is a model directory"):
        build(model_dir, model_dir)
    with pytest.raises(SystemExit, match="spark-topics browse: --output .* is a model directory"):
        cli.main(["browse", "--model-dir", model_dir, "--output", model_dir])
    with pytest.raises(SystemExit, match="--top-docs must be a positive whole number, got 0"):
        cli.main(["browse", "--model-dir", model_dir, "--output", model_dir + "-site", "--top-docs", "0"])


# ------------------------------------------------------------------------------------------------ family views

@pytest.fixture(scope="module")
def family_sites(spark_session, sites, tiny_models, tmp_path_factory):
    """The family views' sites: ptlda with a prior tree (languages side by side, linked words), dp-mixture and
    cluster-lda (clusters) and a model root of the lda whose version has other topics (drift from the base). Made once per
    run, by whichever pytest-xdist worker needs them first (tests/shared_runs.py: the ptlda is a training)."""
    from shared_runs import made_once, run_folder

    root = run_folder(tmp_path_factory) / "browse_families"
    models = {"ptlda": root / "ptlda", "dp-mixture": tiny_models["dp-mixture"], "root": root / "root",
              "cluster-lda": tiny_models["cluster-lda"]}
    with made_once(root) as make:
        if make:
            shutil.rmtree(root, ignore_errors=True)         # a make that failed half-way
            os.makedirs(root)
            make_family_models(spark_session, root, sites["lda"][0])
            for name, model in models.items():
                build(str(model), str(root / f"site-{name}"))
    return {name: (str(model), str(root / f"site-{name}")) for name, model in models.items()}


def make_family_models(spark_session, root, base):
    """In ``root``: ``ptlda``, trained on a tree corpus with its prior tree, and ``root``, a model root by hand."""
    from drivers.models.tree.prior_tree import save_tree
    from drivers.store import model_root, publish
    from test_tree_models import LINKED, LANGS, sample_tree_corpus

    concepts, _ = sample_tree_corpus(str(root / "tree_corpus"), n_tuples=40, tokens=30)
    save_tree(str(root / "tree"), concepts, {"languages": list(LANGS),
                                             "report": {"concepts": LINKED, "pairs_read": LINKED, "dropped": {},
                                                        "languages": {}}})
    train.train(spark_session, train_args(root / "tree_corpus", root / "ptlda", "--model", "ptlda", "--tree",
                                          root / "tree", "--topics", 3, "--iterations", 3, "--seed", 1))
    # a model root by hand: one version of the lda whose lambda is perturbed, refreshed from the lda as its base
    version = "000001-20261127T000000Z"
    os.makedirs(root / "root" / "versions")
    with publish.publishing(str(root / "root" / "versions" / version)) as staging:
        for name in ("vocab.parquet", "doc_topics.parquet"):
            copy = shutil.copytree if os.path.isdir(os.path.join(base, name)) else shutil.copy2
            copy(os.path.join(base, name), os.path.join(staging, name))
        lam = np.load(os.path.join(base, "lambda.npy"))
        np.save(os.path.join(staging, "lambda.npy"), lam * np.random.default_rng(0).gamma(5.0, 0.2, lam.shape))
        meta = json.load(open(os.path.join(base, "model.json")))
        meta["refresh"] = {"parent": {"base": base, "token": publish.read_marker(base)["token"], "documents": 40}}
        json.dump(meta, open(os.path.join(staging, "model.json"), "w"))
    model_root.set_latest(str(root / "root"), version)


def test_family_views(family_sites):
    from drivers.store import model_store
    from inference.distances import hellinger

    ptlda, site = family_sites["ptlda"]
    summary = site_summary(site)
    assert summary["views"] == ["languages", "tree"]
    for k in range(3):
        en, es = site_topic(site, k)["panels"]
        assert (en["language"], es["language"]) == ("en", "es")
        for term, linked in zip(en["terms"], en["linked"]):     # word i of each language is a concept for i < 10
            assert linked == ([f"es:{term}"] if int(term[1:]) < 10 else []), term
        assert set(en["terms"]) <= set(load_model(ptlda).language_view("en").vocab["term"])
    dp, site = family_sites["dp-mixture"]
    assert site_summary(site)["views"] == ["clusters"]
    sampled = pd.read_parquet(os.path.join(dp, "doc_clusters.parquet"))
    K = load_model(dp).num_topics
    for k in range(K):
        cluster = site_topic(site, k)["cluster"]
        mine = sampled[sampled["cluster"] == k]
        assert cluster["documents"] == len(mine)
        assert cluster["mean_probability"] == (pytest.approx(mine["probability"].mean(), abs=1e-4) if len(mine)
                                               else None)
    clustered, site = family_sites["cluster-lda"]
    assert site_summary(site)["views"] == ["clusters"]
    levels = np.load(os.path.join(clustered, "cluster_topics.npy")).astype(float)
    sizes = np.load(os.path.join(clustered, "cluster_docs.npy"))
    shares = levels / levels.sum(axis=1, keepdims=True)
    for k in range(load_model(clustered).num_topics):
        listed = site_topic(site, k)["clusters"]             # the clusters giving topic k the largest shares
        assert "cluster" not in site_topic(site, k)           # not a dp-mixture's cluster = topic
        assert [c["share"] for c in listed] == sorted((c["share"] for c in listed), reverse=True)
        assert len(listed) == min(5, int((shares[:, k] > 0).sum()))
        for c in listed:
            assert c["share"] == pytest.approx(shares[c["cluster"], k], abs=1e-4)
            assert c["documents"] == sizes[c["cluster"]]
        assert listed[0]["share"] == pytest.approx(shares[:, k].max(), abs=1e-4)
    root, site = family_sites["root"]
    assert site_summary(site)["views"] == ["drift"] and site_summary(site)["card"]["version"].startswith("000001")
    old = model_store.load_model(family_sites_base(root)).topic_word()
    new = model_store.load_model(root).topic_word()
    for k in range(3):
        drift = site_topic(site, k)["drift"]
        assert drift["versions"] == ["base", site_summary(site)["card"]["version"]]
        assert drift["hellinger"] == [pytest.approx(float(hellinger(old[k], new[k])), abs=1e-5)]
        assert drift["hellinger"][0] > 0.01


def family_sites_base(root: str) -> str:
    from drivers.store import model_root

    meta = json.load(open(os.path.join(model_root.resolve(root), "model.json")))
    return meta["refresh"]["parent"]["base"]


def test_family_views_in_headless_chromium(family_sites):
    require(chromium() is not None, "Debian's chromium (headless browser)")
    with Browser() as b:
        for name, selector in (("ptlda", "#topic-0 ol.words[data-language=\"es\"] li"),
                               ("ptlda", "#topic-0 span.linked"),
                               ("dp-mixture", "#topic-0 .topic-body p"),
                               ("cluster-lda", "#topic-0 svg.flow rect"),
                               ("root", "#topic-0 svg.flow rect")):
            b.open("file://" + os.path.join(family_sites[name][1], "index.html") + "#topic-0")
            b.wait_for(f"document.querySelectorAll('{selector}').length > 0")
        b.pump(0.2)
        assert b.errors() == []


def test_snippets_lengths_and_coherence_from_the_corpus_files(tmp_path):
    """corpus_view against the files: a kept text column is the snippet (whitespace folded, cut at a word), a
    segmented corpus gives its first words in order, a bag of words its words by count; NPMI = the definition
    counted document by document."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from drivers.browse import corpus_view
    from inference.heldout import npmi

    terms = np.array(["a", "b", "c", "d"])
    docs = {"doc_id": ["x", "y", "z"], "term_ids": [[0, 1], [1, 2, 3], [0, 3]], "counts": [[1, 3], [2, 1, 5], [1, 1]],
            "n_tokens": [4, 8, 2], "n_oov": [0, 0, 0]}
    bag = tmp_path / "bag"
    os.makedirs(bag / "docs.parquet")
    pq.write_table(pa.table(docs), bag / "docs.parquet" / "part-0.parquet")
    assert corpus_view.snippets(str(bag), ["y", "x"], terms) == {"x": "[bag] b a", "y": "[bag] d b c"}
    assert corpus_view.document_lengths(str(bag)).to_dict() == {"x": 4, "y": 8, "z": 2}
    text = tmp_path / "text"
    os.makedirs(text / "docs.parquet")
    pq.write_table(pa.table(dict(docs, text=["one  two\nthree", "w " * 400, "z"])), text / "docs.parquet" / "p.parquet")
    got = corpus_view.snippets(str(text), ["x", "y"], terms)
    assert got["x"] == "one two three"
    assert got["y"].endswith(" ...") and len(got["y"]) <= 304
    seg = tmp_path / "seg"
    os.makedirs(seg / "docs.parquet")
    pq.write_table(pa.table(docs), seg / "docs.parquet" / "p.parquet")
    pq.write_table(pa.table({"doc_id": ["x"], "segments": [[[3, 0], [1]]], "segment_index": [[0, 1]]}),
                   seg / "segments.parquet")
    assert corpus_view.snippets(str(seg), ["x"], terms, n_words=2) == {"x": "d a ..."}
    top = np.array([[0, 1, 3], [1, 2, 3]])
    got = corpus_view.npmi_per_topic(top, str(bag))
    present = [set(t) for t in docs["term_ids"]]
    for row, value in zip(top, got):
        pairs = [(a, b) for i, a in enumerate(row) for b in row[i + 1:]]
        joint = [sum(a in s and b in s for s in present) for a, b in pairs]
        df = {w: sum(w in s for s in present) for w in row}
        assert value == pytest.approx(np.mean(npmi(np.array(joint), np.array([df[a] for a, _ in pairs]),
                                                    np.array([df[b] for _, b in pairs]), 3)))
