"""``spark-topics refresh``: the next version of a model root from new documents (or a rollback).

::

    spark-topics refresh --model ROOT --input NEW_DOCS [--base MODEL_DIR] [--mode accumulate|online|batch]

The first refresh of a root starts from a trained model (``--base``), later ones from the root's LATEST version.
The run holds the root's lease; it reads the documents as ``prepare`` does, keeps those the root's ledger has not
seen (by id and content hash, :mod:`drivers.refresh.update`), grows the vocabulary, has the model's family fit the batch
(:mod:`drivers.families.variational.refresh`) and publishes the version whole, LATEST last
(:mod:`drivers.store.model_root`). A batch with nothing new publishes nothing and says so.
"""
from __future__ import annotations

import argparse
import dataclasses
import logging
import time

import pandas as pd

from drivers import registry, storage
from drivers.corpora import kept_columns
from drivers.corpora.aligned import word_columns
from drivers.models.infvoc import commands as infinite
from drivers.preparation.corpus import prepare_corpus
from drivers.preparation.reading import read_documents
from drivers.refresh import (aligned_batches, base_version, batch_columns, batch_in_process, reinfer, schedule,
                             sources as refresh_sources, update as refresh)
from drivers.refresh.triage import triage
from drivers.refresh.update import RefreshRequest
from drivers.refresh.unpublished import REJECTS_UNPUBLISHED, unpublished, write_rejects  # noqa: F401 (tests)
from drivers.corpora import tokenizer
from drivers.store import base_link, lease, model_root, model_store, publish, topic_model
from inference.errors import RefusedError, UsageError
from jobs.flags import add_model_dir
from jobs.spark import engine_of, local_path, positive_int, sized_session

log = logging.getLogger("spark_topics.refresh")


def add_arguments(parser: argparse.ArgumentParser, argv=None) -> None:
    add_model_dir(parser, "the model ROOT (created by the first refresh)", metavar="ROOT")
    parser.add_argument("--input", metavar="NEW_DOCS", type=local_path,
                        help="new documents: any input of `spark-topics prepare`")
    parser.add_argument("--base", metavar="MODEL_DIR", type=local_path,
                        help="first refresh of a root: the trained model it starts from")
    parser.add_argument("--mode", choices=refresh.MODES, default="auto",
                        help="auto (default): accumulate, and a guided batch pass over the stored batches once the "
                             "documents ingested reach --guided-growth x those of the last full fit; "
                             "accumulate: the old posterior is the batch's prior (no forgetting); online: "
                             "Hoffman's online VB, old documents fade at rate rho_t (drifting corpora); batch: EM "
                             "over every document ingested, from a cold start guided by the previous topics (a "
                             "retrain's quality; each iteration costs a retrain's); chain (Gibbs models, their auto): the saved "
                             "chain continued on the old and the new documents for --iterations sweeps; with nothing "
                             "new in the batch, --mode chain continues it on the same documents")
    parser.add_argument("--iterations", type=int, default=20, help="EM iterations over the batch (default 20)")
    parser.add_argument("--guided-iterations", type=positive_int, default=10,
                        help="auto: EM iterations of a guided pass over every document ingested (default 10)")
    parser.add_argument("--guided-growth", type=float, default=2.0,
                        help="auto: a guided pass once the documents ingested reach this many times those of the "
                             "last full fit (default 2: the union at least doubles between passes; 1: every time)")
    parser.add_argument("--inference", choices=("variational", "hybrid"), default=None,
                        help="the local step (default: the one the model was trained with)")
    parser.add_argument("--tau0", type=float, default=64.0, help="online: rho_t = (tau0 + t)^-kappa (default 64)")
    parser.add_argument("--kappa", type=float, default=0.7, help="online: in (0.5, 1] (default 0.7)")
    parser.add_argument("--corpus-size", default="cumulative",
                        help="online: D in lambda = (1-rho) lambda + rho (eta + D/|S| stats): 'cumulative' (the "
                             "documents ingested so far, as gensim) or a fixed estimate (as Hoffman)")
    parser.add_argument("--guide-weight", type=float, default=100.0,
                        help="batch: each previous topic enters EM's start as this many pseudo-tokens on top of a "
                             "cold start (default 100): topics re-form over all the data, topic k grown from topic "
                             "k; 0 is a cold start (a retrain's topics, in no relation to the previous ones)")
    parser.add_argument("--min-new-df", type=int, default=3,
                        help="a new word enters the vocabulary once this many documents (over the batches) used it")
    parser.add_argument("--max-new-terms", type=int, default=1000, help="at most this many new words per refresh")
    parser.add_argument("--probe", metavar="CORPUS_DIR", type=local_path,
                        help="a prepared held-out corpus: its perplexity under the new version goes in the report")
    parser.add_argument("--keep", type=positive_int, default=None,
                        help="keep the model files of the N newest versions (older ones keep their ledger and report)")
    parser.add_argument("--rollback", nargs="?", const="", default=None, metavar="VERSION",
                        help="point LATEST at VERSION (default: the parent of LATEST); nothing is trained")
    parser.add_argument("--drift-report", metavar="OUT_DIR", type=local_path, default=None,
                        help="write OUT_DIR/drift.json and drift.png: topics matched over every committed version, "
                             "their drift and the new words' rank trajectories; nothing is trained")
    parser.add_argument("--reinfer-old", action="store_true",
                        help="also infer every earlier document's topic proportions under the new version (the "
                             "version's doc_topics.parquet then holds every document ingested)")
    parser.add_argument("--chain-sweeps", choices=("all", "new"), default="all",
                        help="Gibbs models: sweep every document (the chain continued: default), or only the new "
                             "ones, the old keeping their assignments (a refresh then costs sampling the batch)")
    parser.add_argument("--seed", type=int, default=None, help="default: the model's seed")
    parser.add_argument("--partitions", type=positive_int, default=None)
    parser.add_argument("--dry-run", action="store_true", help="read and count the batch; publish nothing")
    parser.add_argument("--format", default="auto", help="input format, as in `prepare`")
    parser.add_argument("--id-column", default="id")
    parser.add_argument("--text-column", default="text")
    parser.add_argument("--lang-column", default="lang",
                        help="a model of an aligned corpus (polylda, ptlda): the batch's language column (as prepare's)")
    infinite.add_flags(parser.add_argument_group("online LDA with an infinite vocabulary"), False, parser)


def request_from(args) -> RefreshRequest:
    if args.rollback is None and not args.input and not args.drift_report:
        raise UsageError("refresh needs --input NEW_DOCS (or --rollback, or --drift-report)")
    return RefreshRequest(root=args.model, input=args.input, base=args.base, mode=args.mode,
                          iterations=args.iterations, guided_iterations=args.guided_iterations,
                          guided_growth=args.guided_growth, inference=args.inference, tau0=args.tau0, kappa=args.kappa,
                          corpus_size=args.corpus_size,
                          guide_weight=args.guide_weight, min_new_df=args.min_new_df,
                          max_new_terms=args.max_new_terms, probe=args.probe, keep=args.keep,
                          rollback=args.rollback, seed=args.seed, partitions=args.partitions,
                          dry_run=args.dry_run, drift_report=args.drift_report,
                          reinfer_old=args.reinfer_old, format=args.format, id_column=args.id_column,
                          text_column=args.text_column, chain_sweeps=args.chain_sweeps,
                          lang_column=args.lang_column,
                          batch_in_process=engine_of(getattr(args, "master", None)) != "spark")


def refresh_root(spark, request: RefreshRequest) -> dict:
    """Run one refresh (or rollback) of ``request.root`` under its lease; returns the report."""
    if request.base and request.rollback is None:
        refresh_sources.check_root_and_base(request.root, request.base)
    with lease.hold(request.root, "spark-topics refresh"):
        for name in model_root.recover(request.root):
            log.warning("%s: put right after a killed run: %s", request.root, name)
        if request.rollback is not None:
            return rollback(request)
        report = _refresh(spark, request)
        if request.keep and not request.dry_run:
            pruned = model_root.prune(request.root, request.keep)
            if pruned:
                log.info("pruned the model files of %d older version(s): %s", len(pruned), ", ".join(pruned))
        return report


def family_infer(spark, spec, staging: str):
    """``infer(model, corpus_dir, output_dir)`` by the model's family, as ``spark-topics infer`` runs it."""
    from drivers.families import InferRequest

    def infer(model, corpus_dir: str, output_dir: str) -> dict:
        request = InferRequest(model_dir=staging, input=corpus_dir, output=output_dir)
        return spec.family_object().infer(spark, model, corpus_dir, request)
    return infer


def drift_report(request: RefreshRequest) -> dict:
    """``--drift-report OUT_DIR`` alone: the report across the root's versions; no Spark, no lease (reads only)."""
    from drivers.refresh import drift_report as report_module

    report = report_module.write_report(request.root, request.drift_report)
    moved = sum(not s["identity"] for s in report["steps"])
    print(f"drift report of {len(report['versions'])} versions of {request.root} -> {request.drift_report} "
          f"({moved} step(s) where a topic matched another best)")
    return report


def rollback(request: RefreshRequest) -> dict:
    root = request.root
    current = model_root.latest(root)
    if current is None:
        raise UsageError(f"{root} has no published version to roll back")
    if request.rollback:
        target = model_root.version_name(root, request.rollback)
    else:
        committed = model_root.chain(root)
        if len(committed) < 2:
            raise UsageError(f"{root}: {current} has no earlier version to roll back to")
        target = committed[1]
    if model_root.is_pruned(model_root.version_dir(root, target)):
        raise RefusedError(f"{root}: version {target} was pruned (--keep): its model files are gone")
    model_root.set_latest(root, target)
    model_root.sync_doc_topics(root)
    print(f"{root}: LATEST {current} -> {target}")
    return {"version": target, "previous": current, "rollback": True}


def _refresh(spark, request: RefreshRequest) -> dict:
    started = time.time()
    root = request.root
    current = model_root.latest(root)
    if current is None:
        if not request.base:
            raise UsageError(f"{root} has no version yet: the first refresh needs --base MODEL_DIR (a trained model)")
        base_dir = model_store.resolve(request.base)
    else:
        if request.base:
            raise UsageError(f"{root} already has versions (LATEST {current}): --base is only for its first "
                             f"refresh; drop it")
        base_dir = model_root.version_dir(root, current)
    base = model_store.load_model(base_dir)
    spec = registry.of_meta(base.meta)
    auto = request.mode == "auto" and (schedule.CHEAP in spec.refresh_modes or "chain" in spec.refresh_modes)
    if spec.family == "gibbs" and spec.refresh_modes:    # refused before the batch is read, naming why
        spec.family_object().check_refreshable(spec, base.meta)
    if request.mode not in spec.refresh_modes and not auto:
        raise RefusedError(f"refresh --mode {request.mode} is not supported for --model {spec.name}"
                           + (f" (it supports: {', '.join(spec.refresh_modes)})" if spec.refresh_modes else
                              ": retrain on the union of the documents with `spark-topics train`"))
    history = dict(base.meta.get("refresh") or {})
    version = model_root.next_version(root)
    token = publish.new_token()
    staging = model_root.staging_version(root, version, token)
    storage.makedirs(staging)
    try:
        report = _build_version(spark, request, root, current, base, base_dir, spec, history, version, staging)
        if report.get("published") is False or request.dry_run:
            return report
        if request.reinfer_old and report["mode"] not in ("batch", "chain"):   # every document inferred already
            report["reinferred"] = reinfer.reinfer_all(spark, root, staging, family_infer(spark, spec, staging))
        if current is None:                    # the base model becomes version 0, the first version's parent
            base_version.publish_base_version(root, base_dir, staging, report)
        report["seconds"] = round(time.time() - started, 3)
        storage.save_json(storage.join(staging, refresh.REPORT_JSON), report)
        refresh.plot_report(storage.join(staging, refresh.REPORT_PNG), report)
        publish.write_marker(staging, token)
        model_root.publish_version(root, staging, version)
    finally:
        if storage.exists(staging):
            storage.delete(staging)
    print(summary(report))
    return report


def _build_version(spark, request, root, current, base, base_dir, spec, history, version, staging) -> dict:
    chain_dirs = [model_root.version_dir(root, v) for v in model_root.chain(root)]
    if current is None:                        # the base model's training corpus, by absolute path
        history = dict(history, **refresh_sources.training_history(base_dir, base.meta))
    training = schedule.guided_training(request, spec.refresh_modes, root, chain_dirs, history)   # checked before the batch is read
    if base.meta.get("languages"):
        ingested = aligned_batches.ingest(spark, request, root, current, base, base_dir,
                                          ledger_of(spark, chain_dirs, current, base_dir, version), version, staging,
                                          spec)
    else:
        ingested = ingest_batch(spark, request, root, current, base, base_dir, chain_dirs, version, staging, spec)
    if isinstance(ingested, dict):             # nothing new, or --dry-run: the report of what was read
        return ingested
    documents, prepared, new_terms, pending, vocab, corpus_dir = ingested

    history_before = dict(history)
    if current is None:
        stats, n_base = refresh.alpha_statistics(storage.join(base_dir, "doc_topics.parquet"))
        history_before.update(documents=n_base, alpha_statistics=None if stats is None else stats.tolist(),
                              steps=0, base_documents=n_base)
    decision = None
    if request.mode == "auto":
        decision = schedule.decide(history_before, prepared["documents"], request.guided_growth,
                                   training is not None, spec.refresh_modes, revised=documents.get("revision", 0))
        log.info("refresh --mode auto: %s (%s)", decision.mode, decision.reason)
        request = dataclasses.replace(request, mode=decision.mode, iterations=request.guided_iterations
                                      if decision.mode == schedule.GUIDED else request.iterations)
    fit_dir = corpus_dir
    if request.mode == "batch":
        union = aligned_batches.union_corpus if base.meta.get("languages") else refresh_sources.union_corpus
        fit_dir = union(spark, training, chain_dirs, corpus_dir, staging)
    meta = spec.family_object().refresh(spark, spec, base, fit_dir, request, history_before, staging)
    meta["data"]["corpus"] = storage.join(model_root.version_dir(storage.absolute(root), version), "corpus")
    if fit_dir is not None:               # the columns prepare kept (a document's date, authors), as train carries them
        kept_columns.carry_into(storage.join(staging, "doc_topics.parquet"), fit_dir)
    if fit_dir != corpus_dir:
        storage.delete(fit_dir)
    batch_stats, n_batch = refresh.alpha_statistics(storage.join(staging, "doc_topics.parquet"))
    revised_out_stats = meta.pop("revised_out_alpha_statistics", None)   # the family's hand-over, not model.json's
    if request.mode == "batch" or (request.mode == "chain" and request.reinfer_old):   # rows for every document
        documents_total = n_batch
        stats_total = batch_stats
    else:
        documents_total = int(history_before.get("documents") or 0) + n_batch \
            - int(meta.get("revised_out") or 0)         # revised documents' old copies that left the model
        previous = refresh.kept_alpha_statistics(history_before, revised_out_stats)   # less the old copies
        stats_total = batch_stats if previous is None or batch_stats is None else batch_stats + previous
    parent = {"version": current} if current is not None else refresh_sources.base_parent(base_dir, n_base)
    meta["refresh"] = {
        "parent": parent, "mode": request.mode, "steps": int(history_before.get("steps") or 0)
        + (meta["iterations"] if request.mode == "online" else 0),
        "documents": documents_total, "alpha_statistics": None if stats_total is None else stats_total.tolist(),
        "training_corpus": base_link.stored_path(history_before.get("training_corpus"), root),
        "training_version": history_before.get("training_version"), "batch_documents": prepared["documents"],
        "base_documents": history_before.get("base_documents"),
        "guided_documents": schedule.recorded_fit(history_before, request.mode, documents_total),
        "new_terms": len(new_terms), "tau0": request.tau0, "kappa": request.kappa}
    storage.save_json(storage.join(staging, "model.json"), meta)
    model_store.write_parquet(storage.join(staging, refresh.NEW_TERMS), new_terms)
    model_store.write_parquet(storage.join(staging, refresh.PENDING_TERMS), pending)
    new_model = model_store.read_model_files(staging)
    drift = refresh.topic_drift(base.topic_word(), new_model.topic_word()[:, word_columns(
        base.vocab, new_model.vocab)])
    report = {"version": version, "parent": parent, "mode": request.mode, "documents": documents,
              "schedule": None if decision is None else {"requested": "auto", "reason": decision.reason},
              "ingested": prepared["documents"], "tokens": prepared.get("tokens"),
              "vocabulary": {"before": int(len(base.vocab)), "after": int(len(vocab)),
                             "added": int(len(new_terms)), "new_terms": new_terms["term"].astype(str).tolist()[:200],
                             "pending": int(len(pending)), "min_new_df": request.min_new_df},
              "drift": drift, "iterations": meta["iterations"], "elbo": meta.get("elbo")}
    if request.probe:
        report["probe"] = probe_perplexity(spark, staging, request.probe)
    return report


def ingest_batch(spark, request, root, current, base, base_dir, chain_dirs, version, staging, spec):
    """The batch's documents the ledger has not seen, prepared with the grown vocabulary into ``staging/corpus``:
    ``(documents, prepared, new_terms, pending, vocab, corpus_dir)``, or the report of a run that publishes
    nothing (nothing new, or ``--dry-run``). A small local batch is read, sorted by the ledger and counted in
    this process (:mod:`drivers.refresh.batch_in_process`), a larger one by Spark jobs (the same outcome)."""
    sc = spark.sparkContext
    options = {k: v for k, v in tokenizer.raw_text_options(base).items() if k != "segments" or spec.family == "gibbs"}
    sc.setJobDescription(f"refresh {root}: read and classify {request.input}")
    chain_on, kept = request.mode == "chain", tuple(batch_columns.columns_to_keep(base.meta))   # e.g. authors
    read = batch_in_process.read_batch(request, staging, kept) if request.batch_in_process else None
    if read is not None:                 # the kept columns come with the rows, of the reader's types
        sorted_batch = batch_in_process.BatchInProcess(
            read[0], batch_in_process.committed_ledger(chain_dirs, base_dir, current), request, current, staging,
            chain_on, read[1])
    else:
        rows = read_documents(spark, request.input, format=request.format, id_column=request.id_column,
                              text_column=request.text_column, keep_columns=kept)
        sorted_batch = triage(refresh.classify(rows, ledger_of(spark, chain_dirs, current, base_dir, version),
                                               kept).cache(), request, current, version, staging, chain_on)
    try:
        if sorted_batch.report is not None:
            return sorted_batch.report
        chain_only = sorted_batch.documents["new"] + sorted_batch.documents["revision"] == 0   # a Gibbs chain goes on
        input_dir = storage.join(staging, "work-input")
        sorted_batch.write_input(input_dir, kept)

        # the vocabulary: the batch's words the model does not know (nor cut as too frequent), counted over batches
        sc.setJobDescription(f"refresh {root}: the batch's words the model does not know")
        pending_path = storage.join(base_dir, refresh.PENDING_TERMS)
        pending = model_store.read_parquet(pending_path) if storage.exists(pending_path) else None
        new_terms, pending = sorted_batch.new_words(spark, base, options, pending, request)
        vocab = pd.concat([base.vocab[["term"]], new_terms[["term"]]], ignore_index=True)
        vocab["id"] = range(len(vocab))
        vocab_path = storage.join(staging, "work-vocab.parquet")
        model_store.write_parquet(vocab_path, vocab)
        corpus_dir = None if chain_only else storage.join(staging, "corpus")
        prepared = {"documents": 0, "tokens": 0} if chain_only else prepare_corpus(
            spark, input_dir, corpus_dir, format="parquet", id_column="id", text_column="text", vocab=vocab_path,
            **options, **({"keep_columns": kept} if kept else {}))
        storage.delete(vocab_path)
        sorted_batch.write_ledger(spark, corpus_dir, version, staging)
        storage.delete(input_dir)
    finally:
        sorted_batch.release()
    return sorted_batch.documents, prepared, new_terms, pending, vocab, corpus_dir


def ledger_of(spark, chain_dirs: list[str], current: str | None, base_dir: str, version: str):
    """The committed ledger as a Spark DataFrame: the root's, or the base model's documents before the first
    refresh."""
    return refresh.read_ledger(spark, chain_dirs) if current is not None else \
        refresh.base_ledger(spark, base_dir, version)


def probe_perplexity(spark, model_dir: str, probe: str) -> dict:
    """Document-completion perplexity of the new version on a prepared held-out corpus, over the probe's own
    vocabulary (prepared with the base model's, a prefix of every later version's: ids only grow)."""
    from drivers.corpora.bow import open_corpus_meta
    from drivers.families.variational.evaluate import evaluate_model

    model = model_store.read_model_files(model_dir)
    _, probe_vocab = open_corpus_meta(spark, probe)
    V = len(probe_vocab)
    if V > len(model.vocab) or probe_vocab["term"].astype(str).tolist() != \
            model.vocab["term"].astype(str).tolist()[:V]:
        raise UsageError(f"--probe {probe}: its vocabulary is not the model's (prepare it with --vocab "
                         f"<the base model>/vocab.parquet)")
    view = topic_model.TopicModel(model.directory, dict(model.meta, vocab_size=V), model.vocab.iloc[:V].copy(),
                                  model.lambda_[:, :V])
    metrics = evaluate_model(spark, view, probe, None, 10, 0, None, None)
    return {"corpus": probe, "perplexity": metrics.get("perplexity"), "documents": metrics.get("documents"),
            "vocabulary": V}


def summary(report: dict) -> str:
    d = report["documents"]
    return (f"published {report['version']}: {report['ingested']} documents ingested ({d['new']} new, "
            f"{d['revision']} revised; {d['duplicate'] + d['adopted']} already ingested, "
            f"{sum(d['rejected'].values())} rejected), {report['vocabulary']['added']} new words, topic drift mean "
            f"{report['drift']['mean']:.3f} max {report['drift']['max']:.3f}"
            + ("" if report['drift']['identity_matching'] else
               f" (topics {report['drift']['topics_matched_elsewhere']} now match other topics best)")
            + (f", probe perplexity {report['probe']['perplexity']:.1f}" if report.get("probe") else ""))


def run(args) -> dict:
    if args.vocabulary == "infinite":
        return infinite.refresh(sized_session("spark-topics refresh", args, lambda conf, active: conf), args)
    request = request_from(args)
    if request.drift_report and request.input is None and request.rollback is None:
        return drift_report(request)
    spark = sized_session("spark-topics refresh", args, lambda conf, active: conf)
    return refresh_root(spark, request)


if __name__ == "__main__":
    import os
    import sys
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from jobs.cli import job_main
    sys.exit(job_main("refresh"))
