"""``train --vocabulary infinite`` and ``refresh --vocabulary infinite``: online LDA whose topics' vocabularies
grow with the stream (thesis chapter 7; :mod:`drivers.models.infvoc.engine` runs each minibatch on Spark).

* ``train``: the prepared corpus' documents, sorted by id (a date-like id gives a stream in time), as the model's
  strings, in minibatches of ``--minibatch-size``; G_0 is fitted on the corpus' vocabulary (the reasons: README,
  "Infinite vocabulary"), which is also the base vocabulary ``topics`` marks new words against.
* ``refresh``: a root's next version from raw documents (any ``prepare`` input), tokenised as the model's
  training corpus was (``tokenizer.json``) but with no vocabulary at all: every word can enter a topic, and
  nothing is re-prepared. Documents are streamed in input order.
"""
from __future__ import annotations

import logging
import time
from types import SimpleNamespace

import numpy as np
import pandas as pd

from drivers import storage
from drivers.corpora.files import DOCS, VOCAB, require_corpus
from drivers.models.infvoc.engine import empty_sets, run_stream, steps_in_process
from drivers.models.infvoc.model import InfVocModel, is_infinite, is_model_file
from drivers.progress import Steps
from drivers.refresh import sources as refresh_sources
from drivers.corpora import tokenizer
from drivers.spark_parquet import read_parquet
from drivers.store import lease, model_root, model_store, publish
from drivers.store.manifest import new_token, write_marker
from inference.errors import UsageError
from inference.infvoc.base_measure import CharNgramBase
from inference.infvoc.doc_prior import ALPHA_THETA
from inference.infvoc.tos import (DROPPED_WORDS, EXPANSIONS, RANKINGS, REFRESH_WEIGHTS, RESEED_AGAINST, RESEED_DRAWS,
                                  OnlineSettings, share_step, with_filters)

log = logging.getLogger("spark_topics.infvoc")

VOCABULARIES = ("fixed", "infinite")

#: ``--passes auto``: the online steps a corpus or a refresh's batch makes at least, and the passes at most (issue 30:
#: with one pass of a few minibatches the topics do not separate; README, "Defaults: --passes auto")
AUTO, AUTO_STEPS, AUTO_MAX_PASSES = "auto", 60, 20


#: the help section of the infinite vocabulary's flags that are measured variants, not defaults
EXPERIMENTS_GROUP = ("infinite vocabulary, measured variants (not defaults: each failed its pre-registered rule; "
                     "README, \"Infinite vocabulary\")")


def add_flags(group, schedule: bool, parser=None) -> None:
    """The flags of ``--vocabulary infinite`` (``schedule``: also --tau0/--kappa, which ``refresh`` has already);
    with ``parser``, the flags of measured variants that are not defaults (each failed its pre-registered rule,
    README "Infinite vocabulary") in a group of their own, :data:`EXPERIMENTS_GROUP`."""
    experiments = group if parser is None else parser.add_argument_group(EXPERIMENTS_GROUP)
    group.add_argument("--vocabulary", choices=VOCABULARIES, default="fixed",
                       help="infinite: online LDA whose topics take in words never seen before (Zhai & "
                            "Boyd-Graber 2013); the flags below apply to it")
    group.add_argument("--alpha-beta", type=float, default=None,
                       help="infinite: the DP scale alpha^beta of every topic (default 1000, or the model's)")
    group.add_argument("--truncation", type=int, default=None,
                       help="infinite: T, the words a topic keeps at each reordering (default 4000, or the model's)")
    group.add_argument("--reorder-delay", type=int, default=None,
                       help="infinite: U, reorder and cut the topics' word sets every U minibatches (default 10)")
    group.add_argument("--minibatch-size", type=int, default=256, help="infinite: documents per minibatch")
    group.add_argument("--ranking", choices=RANKINGS, default=None,
                       help="infinite: the ranking score that orders and cuts a topic's words: G_0(w) x counts (base, "
                            "the thesis' 7.5; the default, or the model's) or counts alone (counts, as the thesis' "
                            "code, whose G_0 is switched off)")
    group.add_argument("--dropped-words", choices=DROPPED_WORDS, default=None,
                       help="infinite: a word cut from a topic at a reordering comes back as new (forget, the "
                            "default, or the model's) or with the topic's smallest ranking score, remembered in a "
                            "Bloom filter of 16 KiB per topic (bloom)")
    group.add_argument("--expand", choices=EXPANSIONS, default=None,
                       help="infinite: which topics take a word of a minibatch: every topic, before the minibatch's "
                            "local step (every, as the thesis' code; the default for a new model, or the model's), "
                            "or the topics a token of it is sampled into, through G_0 (sampled; with --passes 1 "
                            "the thesis' Algorithm 4 as printed)")
    experiments.add_argument("--reseed-below", type=float, default=None,
                       help="infinite: at each reordering, re-seed a topic whose evidence (its sticks' counts) is "
                            "below this fraction of the topics' mean from one document of the minibatch (default 0: "
                            "off, as the thesis; or the model's)")
    experiments.add_argument("--reseed-draw", choices=RESEED_DRAWS, default=None,
                       help="infinite: how --reseed-below draws its documents from the minibatch: by their distinct "
                            "words (words, the default, or the model's) or uniformly (uniform)")
    experiments.add_argument("--reseed-against", choices=RESEED_AGAINST, default=None,
                       help="infinite: what --reseed-below is a fraction of: the topics' mean evidence (mean, the "
                            "default, or the model's) or one average document of the minibatch (document)")
    experiments.add_argument("--refresh-weight", choices=REFRESH_WEIGHTS, default=None,
                       help="infinite: a refresh's step: eps_i = (tau0 + i)^-kappa, i counting on from the model's "
                            "minibatches (schedule, the default, or the model's), or one eps for all its steps that "
                            "leaves the batch its share of the documents seen, n/D (share)")
    experiments.add_argument("--discount", type=float, default=None,
                       help="infinite: d in [0, 1) of the sticks' Pitman-Yor GEM(d, alpha^beta): a word a topic has "
                            "not seen keeps the pseudo-count 1 - d (default 0, the thesis' GEM(alpha^beta), or the "
                            "model's)")
    experiments.add_argument("--alpha-theta", choices=ALPHA_THETA, default=None,
                       help="infinite: the document-topic prior alpha^theta: 1/K for every topic (fixed, the default, "
                            "or the model's) or learned online, a Newton step per minibatch weighted by eps_i (fit; "
                            "inference.infvoc.doc_prior)")
    group.add_argument("--passes", default=AUTO,
                       help=f"infinite: passes over the documents, one online step per minibatch each; D of (7.6) "
                            f"counts a document once. 'auto' (the default): enough passes that the documents make "
                            f"at least {AUTO_STEPS} online steps, at most {AUTO_MAX_PASSES} passes (one pass from "
                            f"{AUTO_STEPS} minibatches on); a number: that many. `--passes 1 --expand sampled` is "
                            f"the thesis' Algorithm 4 (one step per minibatch)")
    if schedule:
        group.add_argument("--tau0", type=float, default=1.0, help="infinite: eps_i = (tau0 + i)^-kappa (default 1)")
        group.add_argument("--kappa", type=float, default=0.6, help="infinite: in (0.5, 1] (default 0.6)")
        group.add_argument("--corpus-size", default="cumulative",
                           help="infinite: D of (7.6), the update's D / |S|: 'cumulative' (the documents seen so "
                                "far, the default) or the stream's expected size; refresh's --corpus-size sets it "
                                "for the rest of the stream (its default keeps the model's)")


def passes_of(args, documents: int) -> int:
    """The passes over ``documents`` documents in minibatches of ``args.minibatch_size``: ``--passes`` as a number,
    or 'auto': ceil(AUTO_STEPS / minibatches), between 1 and AUTO_MAX_PASSES."""
    value = getattr(args, "passes", AUTO)
    if value in (None, AUTO):
        minibatches = max(1, -(-int(documents) // max(1, int(args.minibatch_size))))
        return int(min(AUTO_MAX_PASSES, max(1, -(-AUTO_STEPS // minibatches))))
    try:
        passes = int(value)
    except ValueError:
        raise UsageError(f"--passes: 'auto' or a number of passes, not {value!r}") from None
    if passes < 1:
        raise UsageError("--passes must be at least 1")
    return passes


def _settings(args, previous: OnlineSettings | None) -> OnlineSettings:
    base = previous or OnlineSettings()
    settings = OnlineSettings(
        alpha_beta=args.alpha_beta if args.alpha_beta is not None else base.alpha_beta,
        truncation=args.truncation if args.truncation is not None else base.truncation,
        delay=args.reorder_delay if args.reorder_delay is not None else base.delay,
        tau0=args.tau0 if getattr(args, "tau0", None) is not None else base.tau0,
        kappa=args.kappa if getattr(args, "kappa", None) is not None else base.kappa,
        corpus_size=_corpus_size(getattr(args, "corpus_size", None), base.corpus_size),
        dropped_words=getattr(args, "dropped_words", None) or base.dropped_words,
        ranking=getattr(args, "ranking", None) or base.ranking,
        expand=getattr(args, "expand", None) or base.expand,
        reseed=args.reseed_below if getattr(args, "reseed_below", None) is not None else base.reseed,
        reseed_draw=getattr(args, "reseed_draw", None) or base.reseed_draw,
        reseed_against=getattr(args, "reseed_against", None) or base.reseed_against,
        refresh_weight=getattr(args, "refresh_weight", None) or base.refresh_weight,
        discount=args.discount if getattr(args, "discount", None) is not None else base.discount,
        alpha_theta=getattr(args, "alpha_theta", None) or base.alpha_theta)
    try:
        settings.check()
    except ValueError as exc:
        raise UsageError(f"--vocabulary infinite: {exc}") from None
    if args.minibatch_size < 1:
        raise UsageError("--minibatch-size must be at least 1")
    return settings


def _corpus_size(value, previous: float) -> float:
    """D of (7.6) from ``--corpus-size``: 'cumulative' (or absent) keeps ``previous`` (0 for a new model: the
    documents seen so far), a number is D."""
    if value in (None, "cumulative"):
        return previous
    try:
        return float(value)
    except ValueError:
        raise UsageError(f"--corpus-size: 'cumulative' or a number of documents, not {value!r}") from None


def corpus_documents(spark, corpus_dir: str, vocab: pd.DataFrame) -> list:
    """[(doc_id, tokens as strings)] of a prepared corpus, sorted by id."""
    frame = read_parquet(spark, storage.join(corpus_dir, DOCS)).select("doc_id", "term_ids", "counts").toPandas()
    terms = vocab.sort_values("id")["term"].astype(str).to_numpy(dtype=object)
    docs = []
    for doc_id, ids, counts in zip(frame["doc_id"], frame["term_ids"], frame["counts"]):
        docs.append((str(doc_id), np.repeat(terms[np.asarray(ids, dtype=np.int64)],
                                            np.asarray(counts, dtype=np.int64)).tolist()))
    docs.sort(key=lambda item: item[0])
    return docs


def train(spark, args) -> dict:
    """``train --vocabulary infinite``: fit on the prepared corpus ``args.corpus`` in minibatches, publish the
    model directory ``args.output`` whole."""
    started = time.time()
    require_corpus(args.corpus)
    vocab = storage.read_vocab(storage.join(args.corpus, VOCAB))
    if args.topics < 2:
        raise UsageError("--topics must be at least 2")
    settings = _settings(args, None)
    K = int(args.topics)
    base = CharNgramBase.fit(vocab["term"].astype(str).tolist())
    alpha = np.full(K, args.alpha if args.alpha is not None else 1.0 / K)
    model = InfVocModel(with_filters(empty_sets(K), settings), base, alpha, settings,
                        pd.Index(vocab["term"].astype(str).to_numpy(), dtype=object),
                        burn_in=getattr(args, "hybrid_burn_in", None) or 5,
                        samples=getattr(args, "hybrid_samples", None) or 10, seed=int(args.seed))
    documents = corpus_documents(spark, args.corpus, vocab)
    partitions = args.partitions or max(1, spark.sparkContext.defaultParallelism)
    frames = []
    passes = passes_of(args, len(documents))
    per_pass = max(1, -(-len(documents) // args.minibatch_size))
    steps = Steps(passes * per_pass, "train --vocabulary infinite: online step", log)
    in_process = steps_in_process(getattr(args, "master", None) is not None, spark.sparkContext.master,
                                  documents, args.minibatch_size)
    for p in range(passes):
        frames.append(run_stream(spark.sparkContext, model, documents, args.minibatch_size, partitions,
                                 args.reducers, progress=f"pass {p + 1}/{passes}, ", new=p == 0,
                                 after=(passes - 1 - p) * per_pass, steps=steps, in_process=in_process))
    with publish.published(args.output, "spark-topics train --vocabulary infinite", is_model_file) as staging:
        meta = model.save(staging, {"data": {"corpus": storage.absolute(args.corpus)},
                                    "minibatch_size": args.minibatch_size, "corpus_documents": len(documents),
                                    "passes": passes, "seconds": round(time.time() - started, 3)})
        tokenizer.save_tokenizer(staging, args.corpus)
        _write_doc_topics(staging, frames[-1])
        storage.write_bytes(storage.join(staging, "topics.txt"),
                            (model.format_topics(args.top_words) + "\n").encode("utf-8"))
    return meta


def _write_doc_topics(directory: str, frame: pd.DataFrame) -> None:
    """doc_topics.parquet (doc_id, theta, minibatch) as a directory of one part, as Spark writes it (a model
    root copies it into ROOT/doc_topics/)."""
    frame = frame.assign(theta=[np.asarray(t, dtype=np.float64).tolist() for t in frame["theta"]])
    table = storage.join(directory, "doc_topics.parquet")
    storage.makedirs(table)
    model_store.write_parquet(storage.join(table, "part-00000.parquet"), frame)


def raw_documents(spark, path: str, model_dir: str, meta: dict, args) -> tuple[list, int]:
    """([(doc_id, tokens)] of the valid rows of ``path`` in input order, rejected rows), tokenised as the model's
    training corpus was, with no vocabulary: every word but the stop words and the words ``prepare`` cut from the
    training corpus as too frequent (df > max_df, :func:`drivers.corpora.tokenizer.frequent_terms`), which the
    base never had and no refresh adds (issue 30)."""
    from pyspark.sql import functions as F

    from drivers.preparation.options import PrepareOptions
    from drivers.preparation.reading import read_documents
    from drivers.preparation.text import stopword_list, tokenize

    rows = read_documents(spark, path, format=args.format, id_column=args.id_column, text_column=args.text_column)
    model = SimpleNamespace(directory=model_dir, meta=meta)
    options = tokenizer.raw_text_options(model)
    opts = PrepareOptions(**{k: v for k, v in options.items() if k != "segments"})
    stop = sorted(set(stopword_list(opts.language, opts.stopwords)) | set(tokenizer.frequent_terms(model)))
    valid = rows.where(F.col("reason").isNull())
    rejected = rows.count() - valid.count()
    tokens = tokenize(valid.select("doc_id", "text", "order"), "text", "tokens", pattern=opts.token_pattern,
                      min_token_length=opts.min_token_length, stopwords=stop)
    frame = (tokens.orderBy("order.file", "order.offset", "order.row").select("doc_id", "tokens").toPandas())
    return [(str(d), list(t)) for d, t in zip(frame["doc_id"], frame["tokens"]) if len(t)], int(rejected)


def refresh(spark, args) -> dict:
    """``refresh --vocabulary infinite``: the root's next version from ``args.input`` (see the module docstring)."""
    started = time.time()
    root = args.model
    if args.rollback is not None:
        raise UsageError("--vocabulary infinite: roll back without it (`refresh --model ROOT --rollback`)")
    if not args.input:
        raise UsageError("refresh needs --input NEW_DOCS")
    with lease.hold(root, "spark-topics refresh --vocabulary infinite"):
        for name in model_root.recover(root):
            log.warning("%s: put right after a killed run: %s", root, name)
        current = model_root.latest(root)
        if current is None and not args.base:
            raise UsageError(f"{root} has no version yet: the first refresh needs --base MODEL_DIR (a model trained "
                             f"with --vocabulary infinite)")
        if current is not None and args.base:
            raise UsageError(f"{root} already has versions (LATEST {current}): --base is only for its first refresh")
        source = args.base if current is None else model_root.version_dir(root, current)
        meta = storage.load_json(storage.join(source, "model.json"))
        if not is_infinite(meta):
            raise UsageError(f"--vocabulary infinite needs a model trained with `train --vocabulary infinite`; "
                             f"{source} is --model {meta.get('model')}")
        model = InfVocModel.load(source)
        model.settings = _settings(args, model.settings)
        model.sets = with_filters(model.sets, model.settings)
        if args.seed is not None:
            model.seed = int(args.seed)
        documents, rejected = raw_documents(spark, args.input, source, meta, args)
        if not documents:
            raise UsageError(f"{args.input}: no document with words to ingest ({rejected} rejected rows)")
        before = set(model.new_words())
        first = model.minibatches
        passes = passes_of(args, len(documents))
        per_pass = max(1, -(-len(documents) // args.minibatch_size))
        eps = share_step(len(documents), model.documents + len(documents), passes * per_pass) \
            if model.settings.refresh_weight == "share" else None
        steps = Steps(passes * per_pass, f"refresh {root}: online step", log)
        in_process = steps_in_process(getattr(args, "master", None) is not None, spark.sparkContext.master,
                                      documents, args.minibatch_size)
        for p in range(passes):
            frame = run_stream(spark.sparkContext, model, documents, args.minibatch_size,
                               args.partitions or max(1, spark.sparkContext.defaultParallelism), None,
                               progress=f"pass {p + 1}/{passes}, ", new=p == 0, eps=eps,
                               after=(passes - 1 - p) * per_pass, steps=steps, in_process=in_process)
        version = model_root.next_version(root)
        token = new_token()
        staging = model_root.staging_version(root, version, token)
        storage.makedirs(staging)
        try:
            entered = sorted(set(model.new_words()) - before)
            parent = {"version": current} if current is not None else \
                refresh_sources.base_parent(source, int(meta.get("corpus_documents") or 0))
            report = {"version": version, "parent": parent, "vocabulary": "infinite",
                      "documents": {"ingested": len(documents), "rejected": rejected},
                      "minibatches": [first + 1, model.minibatches], "passes": passes, "eps": eps,
                      "new_words_in_topics": len(entered),
                      "new_words": entered[:200], "tos_sizes": [len(s) for s in model.sets]}
            model.save(staging, {"refresh": report})
            for name in storage.list_dir(source):
                if tokenizer.is_tokenizer_file(name):
                    storage.write_bytes(storage.join(staging, name), storage.read_bytes(storage.join(source, name)))
            _write_doc_topics(staging, frame)
            storage.write_bytes(storage.join(staging, "topics.txt"),
                                (model.format_topics(10) + "\n").encode("utf-8"))
            report["seconds"] = round(time.time() - started, 3)
            storage.save_json(storage.join(staging, "refresh.json"), report)
            write_marker(staging, token)
            model_root.publish_version(root, staging, version)
        finally:
            if storage.exists(staging):
                storage.delete(staging)
    print(f"{root}: version {version} (--vocabulary infinite): {len(documents)} documents in minibatches "
          f"{first + 1}-{model.minibatches} ({passes} passes), {len(entered)} words new to the base vocabulary "
          f"entered the topics"
          + (f" ({', '.join(entered[:10])}{', ...' if len(entered) > 10 else ''})" if entered else "")
          + f"; topic sizes {min(report['tos_sizes'])}-{max(report['tos_sizes'])} words")
    return report
