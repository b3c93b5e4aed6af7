"""``spark-topics train --model lda-gibbs|stm|seqlda|adatm``: Gibbs-sampled topic models on the Gibbs engine.

``jobs/train.py`` dispatches every model of :data:`REGISTRY` here. The corpus
is loaded as segmented blocks (``jobs/segments.py``), the model runs on
:class:`drivers.gibbs.GibbsEngine`, and the model directory gets::

    model.json              model, K, V, alpha and every hyperparameter (hyper), the schedule
                            (iterations, burn-in, lag, samples), the per-iteration trace, seed,
                            partitions, held-out perplexity (when asked), data and code versions
    vocab.parquet           term, id (+ df, cf)
    topic_word.npy          K x V posterior-mean topic-word probabilities (rows sum to 1)
    doc_topics.parquet      doc_id, theta (K): document topic proportions averaged over the samples
    segment_topics.parquet  doc_id, segment (position among the document's kept segments, after
                            --permute-segments when given), theta (K)
    loglik.png              log p(w | z) per token against iteration
    topics.txt              the top words of every topic
"""
from __future__ import annotations

import argparse
import importlib
import json
import logging
import time
from functools import partial

import numpy as np

from drivers import storage
from drivers.gibbs import GibbsEngine, GibbsSettings, SampleSchedule, topic_proportions
from inference.gibbs.heldout import HeldoutSchedule, heldout_loglik, perplexity
from inference.gibbs.lda import LdaGibbs
from inference.gibbs.model import GibbsModel
from jobs import model_store
from jobs.corpus import check_topics
from jobs.segments import load_segmented_corpus

log = logging.getLogger("spark_topics.train")

#: model name -> class, or "module:Class" imported when first used
REGISTRY = {
    "lda-gibbs": LdaGibbs,
    "stm": "inference.gibbs.stm:STM",
    "seqlda": "inference.gibbs.seqlda:SeqLDA",
    "adatm": "inference.gibbs.adatm:AdaTM",
}
#: models that need ordered segments (LDA runs on a plain bag-of-words corpus too)
NEEDS_SEGMENTS = ("stm", "seqlda", "adatm")

#: flag -> hyperparameter name passed to ``initial_hyper(**overrides)`` when the flag is given
HYPER_FLAGS = {"alpha": "alpha", "beta": "beta", "a": "a", "b": "b", "lambda_s": "lambda_s",
               "lambda_t": "lambda_t"}


def model_class(name: str):
    entry = REGISTRY.get(name)
    if entry is None:
        raise SystemExit(f"unknown Gibbs model {name!r}; choose one of {', '.join(REGISTRY)}")
    if isinstance(entry, str):
        module, cls = entry.split(":")
        try:
            entry = getattr(importlib.import_module(module), cls)
        except (ImportError, AttributeError) as exc:
            raise SystemExit(f"model {name!r} is not available: {exc}") from None
    return entry


def make_model(name: str, num_topics: int, vocab_size: int, segment_level: bool = False) -> GibbsModel:
    if segment_level and name != "lda-gibbs":
        raise SystemExit("--segment-level applies to --model lda-gibbs only (LDA_P)")
    cls = model_class(name)
    return cls(num_topics, vocab_size, segment_level=True) if segment_level else cls(num_topics, vocab_size)


def open_trained(model_dir: str):
    """A trained Gibbs model directory: ``(saved, model)``, the stored model (``meta``, ``vocab``, ``lambda_``
    = the K x V topic-word matrix) and the GibbsModel it was trained with."""
    saved = model_store.load_model(model_dir)
    K, V = saved.lambda_.shape
    return saved, make_model(saved.meta["model"], K, V, bool(saved.meta.get("segment_level")))


def add_gibbs_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags of the Gibbs models (``train`` already has --alpha, --fixed-alpha, --iterations, --seed, ...)."""
    g = parser.add_argument_group("Gibbs models (lda-gibbs, stm, seqlda, adatm)")
    g.add_argument("--segment-level", action="store_true",
                   help="lda-gibbs: every segment is a document (LDA_P of the thesis)")
    g.add_argument("--permute-segments", type=int, default=None, metavar="SEED",
                   help="randomly permute the segment order of every document, in training and in the "
                        "held-out split (thesis PTrTe); the permutation is a fixed function of (SEED, doc_id)")
    g.add_argument("--burn-in", type=int, default=None,
                   help="iterations before the first sample (default: iterations - samples x lag)")
    g.add_argument("--lag", type=int, default=None, help="iterations between samples (default: iterations/10)")
    g.add_argument("--samples", type=int, default=None,
                   help="samples averaged into the point estimates (default 5)")
    g.add_argument("--beta", type=float, default=None, help="symmetric topic-word prior (thesis: gamma)")
    g.add_argument("--a", type=float, default=None, help="PDP discount a (stm, seqlda, adatm)")
    g.add_argument("--b", type=float, default=None, help="PDP concentration b (initial value when sampled)")
    g.add_argument("--lambda-s", type=float, default=None, help="adatm: Beta prior lambda_S")
    g.add_argument("--lambda-t", type=float, default=None, help="adatm: Beta prior lambda_T")
    g.add_argument("--hyper", action="append", default=[], metavar="KEY=JSON",
                   help="any other hyperparameter of the model's initial_hyper, e.g. --hyper sample_b=false")
    g.add_argument("--checkpoint-every", type=int, default=10,
                   help="write the sampler state every N iterations (also truncates the RDD lineage)")
    g.add_argument("--sweeps-per-sync", type=int, default=1,
                   help="local sweeps of every partition between two synchronisations of the topic-word "
                        "counts (default 1: AD-LDA; more amortises Spark's per-job cost, with staler counts)")
    g.add_argument("--heldout-fraction", type=float, default=0.0,
                   help="hold out this fraction of documents (by a hash of doc_id) and report their "
                        "perplexity (thesis: 0.2)")
    g.add_argument("--heldout-iterations", type=int, default=50,
                   help="sweeps per held-out document (samples over the second half)")
    g.add_argument("--heldout-samples", type=int, default=5, help="samples averaged per held-out token")
    g.add_argument("--heldout-observed", type=observed_fraction, default=0.5, metavar="F|all",
                   help="document completion (default 0.5): the sampler sees a random fraction F of every test "
                        "segment and the other words are scored (the thesis' 'likelihood of each unseen word', "
                        "Rosen-Zvi et al. 2004); 'all': every word is fitted and scored")


def observed_fraction(text: str) -> float | None:
    """``--heldout-observed``: a fraction in (0, 1), or ``all`` (None: the same-words estimator)."""
    if text.strip().lower() == "all":
        return None
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a fraction in (0, 1) or 'all', got {text!r}") from None
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"expected a fraction in (0, 1) or 'all', got {text!r}")
    return value


def hyper_overrides(args) -> dict:
    """The hyperparameters given on the command line, as ``initial_hyper`` keyword arguments."""
    overrides = {key: getattr(args, flag) for flag, key in HYPER_FLAGS.items()
                 if getattr(args, flag, None) is not None}
    if getattr(args, "fixed_alpha", False):
        overrides["optimize_alpha"] = False
    for item in getattr(args, "hyper", None) or []:
        if "=" not in item:
            raise SystemExit(f"--hyper expects KEY=JSON, got {item!r}")
        key, value = item.split("=", 1)
        try:
            overrides[key.strip().replace("-", "_")] = json.loads(value)
        except json.JSONDecodeError:
            overrides[key.strip().replace("-", "_")] = value
    return overrides


def initial_hyper(model: GibbsModel, overrides: dict) -> dict:
    try:
        hyper = model.initial_hyper(**overrides)
    except TypeError as exc:
        raise SystemExit(f"--model {model.name} does not take these hyperparameters "
                         f"({', '.join(sorted(overrides))}): {exc}") from None
    except ValueError as exc:
        raise SystemExit(f"--model {model.name}: {exc}") from None
    if "beta" not in hyper:
        raise SystemExit(f"{model.name}.initial_hyper must set beta")
    json.dumps(hyper)  # the driver writes it to model.json: it must be JSON
    return hyper


#: variational-only flags of `train` (attribute, unset value): a Gibbs model refuses them rather than ignore them
VARIATIONAL_FLAGS = {"eta": None, "optimize_eta": False, "prior": None, "languages": None,
                     "eta_per_language": None}


def validate(args, vocab_size: int) -> SampleSchedule:
    given = [name for name, unset in VARIATIONAL_FLAGS.items() if getattr(args, name, unset) != unset]
    if given:
        raise SystemExit(f"--model {args.model} is sampled: {', '.join('--' + g.replace('_', '-') for g in given)} "
                         f"only apply to the variational models (the topic-word prior here is --beta)")
    check_topics(args.topics, vocab_size)
    if args.checkpoint_every < 1:
        raise SystemExit("--checkpoint-every must be at least 1")
    try:
        return SampleSchedule.resolve(args.iterations, args.burn_in, args.lag, args.samples)
    except ValueError as exc:
        raise SystemExit(str(exc)) from None


# --------------------------------------------------------------------------- held-out perplexity on Spark

def _heldout_task(partition, items, model, bc, schedule, seed):
    hyper, phi_vk = bc.value
    for _, block in items:
        yield partition, heldout_loglik(model, block, hyper, phi_vk, schedule, seed, partition)


def score_heldout(spark, model: GibbsModel, hyper: dict, topic_word: np.ndarray, blocks,
                  schedule: HeldoutSchedule, seed: int = 0) -> dict:
    """Held-out perplexity (inference/gibbs/heldout.py) of the documents in ``blocks``, summed in partition order."""
    sc = spark.sparkContext
    sc.setJobDescription(f"{model.name}: held-out perplexity ({schedule.iterations} sweeps per document, "
                         f"topics fixed)")
    bc = sc.broadcast((hyper, np.ascontiguousarray(topic_word.T)))
    try:
        parts = sorted(blocks.mapPartitionsWithIndex(partial(_heldout_task, model=model, bc=bc,
                                                             schedule=schedule, seed=seed)).collect(),
                       key=lambda r: r[0])
    finally:
        bc.destroy()
        sc.setJobDescription(None)
    total = np.zeros(3)
    for _, value in parts:
        total += value
    loglik, tokens, docs = total
    return {"perplexity": perplexity(loglik, tokens) if tokens else None, "loglik": float(loglik),
            "tokens": int(tokens), "documents": int(docs), "iterations": schedule.iterations,
            "burn_in": schedule.burn_in, "lag": schedule.lag, "samples": schedule.samples,
            "observed": schedule.observed, "seed": seed}


# --------------------------------------------------------------------------- outputs

def proportion_tables(model: GibbsModel, item: dict):
    """Arrow tables (doc_id, theta) and (doc_id, segment, theta) of one partition's sample averages."""
    import pyarrow as pa

    doc, seg = topic_proportions(model, item)
    orig = item["orig"]
    doc_ids = np.asarray(orig.doc_ids, dtype=object)
    seg_doc = orig.doc_of_segment()
    position = (np.arange(orig.n_segments) - orig.doc_ptr[seg_doc]).astype(np.int32)
    docs = pa.table({"doc_id": pa.array([str(d) for d in doc_ids], pa.string()),
                     "theta": storage.list_column(doc)})
    segments = pa.table({"doc_id": pa.array([str(d) for d in doc_ids[seg_doc]], pa.string()),
                         "segment": pa.array(position, pa.int32()), "theta": storage.list_column(seg)})
    return docs, segments


def write_proportions(spark, model: GibbsModel, states, directory: str) -> None:
    """doc_topics.parquet (doc_id, theta) and segment_topics.parquet (doc_id, segment, theta).

    Each task writes its partition's rows (sorted by document, segments in order)
    as one Parquet part of each directory: Arrow columns, no per-row conversion.
    """
    paths = [storage.join(directory, name) for name in ("doc_topics.parquet", "segment_topics.parquet")]
    for path in paths:
        if storage.exists(path):
            storage.delete(path)

    def write_part(partition, items):
        for _, item in items:
            for path, table in zip(paths, proportion_tables(model, item)):
                storage.write_parquet(storage.join(path, f"part-{partition:05d}.parquet"), table)
            yield partition

    spark.sparkContext.setJobDescription("write document and segment topic proportions")
    states.mapPartitionsWithIndex(write_part).collect()
    spark.sparkContext.setJobDescription(None)


def plot_trace(path: str, trace: list[dict], title: str) -> None:
    """log p(w | z) per token against iteration, samples marked (PNG)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    its = [r["iteration"] for r in trace]
    fig, ax = plt.subplots(figsize=(7, 4), dpi=100)
    ax.plot(its, [r["loglik_per_token"] for r in trace], color="tab:blue")
    samples = [r for r in trace if r["sample"]]
    ax.plot([r["iteration"] for r in samples], [r["loglik_per_token"] for r in samples], "o", color="tab:red",
            label="samples")
    ax.set_xlabel("iteration")
    ax.set_ylabel("log p(w | z) per token")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    import io
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    plt.close(fig)
    storage.write_bytes(path, buffer.getvalue())


# --------------------------------------------------------------------------- the job

def train_gibbs(spark, args) -> dict:
    """Train a Gibbs model and write the model directory; returns model.json's content."""
    started = time.time()
    heldout = float(getattr(args, "heldout_fraction", 0.0) or 0.0)
    corpus = load_segmented_corpus(spark, args.corpus, args.partitions, heldout_fraction=heldout,
                                   split="train" if heldout > 0 else "all",
                                   require_segments=args.model in NEEDS_SEGMENTS,
                                   permute_seed=getattr(args, "permute_segments", None))
    try:
        return _train(spark, args, corpus, heldout, started)
    finally:
        corpus.blocks.unpersist()


def _train(spark, args, corpus, heldout: float, started: float) -> dict:
    K, V = args.topics, corpus.vocab_size
    schedule = validate(args, V)
    model = make_model(args.model, K, V, args.segment_level)
    overrides = hyper_overrides(args)
    hyper0 = initial_hyper(model, overrides)
    if storage.exists(storage.join(args.output, "model.json")) and not args.resume:
        log.warning("overwriting the model in %s", args.output)
    checkpoint_dir = args.checkpoint_dir or storage.join(args.output, "_checkpoint")
    try:
        settings = GibbsSettings(schedule, seed=args.seed, num_reducers=args.reducers,
                                 checkpoint_every=args.checkpoint_every, sweeps_per_sync=args.sweeps_per_sync)
    except ValueError as exc:
        raise SystemExit(str(exc)) from None
    engine = GibbsEngine(spark.sparkContext, model, settings, checkpoint_dir)
    fingerprint = {"corpus": model_store.data_version(corpus.meta), "heldout_fraction": heldout,
                   "segment_level": bool(args.segment_level), "initial_hyper": hyper0}
    permute = getattr(args, "permute_segments", None)
    if permute is not None:
        fingerprint["permute_segments"] = permute
    display = "lda-gibbs (LDA_P, segments as documents)" if args.segment_level else model.name
    log.info("training %s: K=%d, V=%d, %d documents, %d segments, %d tokens, %d partitions, hyper %s",
             display, K, V, corpus.num_documents, corpus.num_segments, corpus.num_tokens,
             corpus.num_partitions, json.dumps(hyper0))
    try:
        result = engine.fit(corpus.blocks, corpus.num_partitions, hyper0, resume=args.resume,
                            fingerprint=fingerprint)
        topic_word = result.topic_word
        if not np.allclose(topic_word.sum(axis=1), 1.0):
            raise RuntimeError("topic_word rows do not sum to 1")
        storage.makedirs(args.output)
        storage.save_npy(storage.join(args.output, "topic_word.npy"), np.ascontiguousarray(topic_word))
        cols = [c for c in ("term", "id", "df", "cf") if c in corpus.vocab.columns]
        model_store.write_parquet(storage.join(args.output, "vocab.parquet"), corpus.vocab[cols])
        write_proportions(spark, model, result.states, args.output)
    finally:
        engine.release()
    trace = [r.__dict__ for r in result.trace]
    meta = {
        "model": model.name, "segment_level": bool(args.segment_level),
        "permute_segments": getattr(args, "permute_segments", None), "topics": K, "vocab_size": V,
        "alpha": result.hyper.get("alpha"), "beta": result.hyper.get("beta"), "hyper": result.hyper,
        "initial_hyper": hyper0, **settings.schedule.to_json(), "samples_taken": result.samples,
        "loglik": trace[-1]["loglik"] if trace else None, "trace": trace,
        "seed": args.seed, "partitions": result.num_partitions, "checkpoint_every": args.checkpoint_every,
        "sweeps_per_sync": args.sweeps_per_sync,
        "data": {"corpus": args.corpus, "version": model_store.data_version(corpus.meta),
                 "documents": corpus.num_documents, "segments": corpus.num_segments, "tokens": corpus.num_tokens,
                 "segmented": corpus.segmented, "split": corpus.split, "heldout_fraction": heldout},
        "code": model_store.code_version(),
    }
    if heldout > 0:
        meta["heldout"] = evaluate_split(spark, model, result.hyper, topic_word, args, heldout)
        observed = meta["heldout"]["observed"]
        log.info("held-out perplexity %.3f (%d documents, %d %s tokens)", meta["heldout"]["perplexity"],
                 meta["heldout"]["documents"], meta["heldout"]["tokens"],
                 "fitted and scored" if observed is None else f"unseen (observed {observed:g} of every segment)")
    meta["train_seconds"] = round(time.time() - started, 3)
    storage.save_json(storage.join(args.output, "model.json"), meta)
    if trace:
        plot_trace(storage.join(args.output, "loglik.png"), trace, f"{display}: Gibbs sampler")
    loaded = model_store.load_model(args.output)
    storage.write_bytes(storage.join(args.output, "topics.txt"), (model_store.format_topics(
        loaded.topic_names(), loaded.top_words(args.top_words), args.top_words) + "\n").encode("utf-8"))
    if not args.keep_checkpoint:
        engine.clear_checkpoint()
    return meta


def evaluate_split(spark, model, hyper, topic_word, args, fraction: float) -> dict:
    test = load_segmented_corpus(spark, args.corpus, None, heldout_fraction=fraction, split="test",
                                 require_segments=args.model in NEEDS_SEGMENTS,
                                 permute_seed=getattr(args, "permute_segments", None))
    try:
        schedule = HeldoutSchedule.default(args.heldout_iterations, args.heldout_samples,
                                           getattr(args, "heldout_observed", 0.5))
        score = score_heldout(spark, model, hyper, topic_word, test.blocks, schedule, seed=args.seed)
    finally:
        test.blocks.unpersist()
    return dict(score, fraction=fraction)


def run(args) -> dict:
    from jobs.spark import get_spark

    spark = get_spark("spark-topics train", args.master, args.conf)
    meta = train_gibbs(spark, args)
    print(storage.read_bytes(storage.join(args.output, "topics.txt")).decode("utf-8"), end="")
    held = f", held-out perplexity {meta['heldout']['perplexity']:.3f}" if "heldout" in meta else ""
    print(f"model written to {args.output} ({meta['iterations']} iterations, {meta['samples_taken']} samples, "
          f"log p(w|z) per token {meta['trace'][-1]['loglik_per_token']:.4f}{held})")
    return meta
