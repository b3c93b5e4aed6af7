"""``spark-topics train``: fit a registered model on a prepared corpus.

The model is looked up in the registry (:mod:`drivers.registry`) and trained by
its family (:mod:`drivers.families`), which writes the model directory.
``train --model NAME --help`` lists the common flags, the flags of the model's
family and the model's own.
"""
from __future__ import annotations

import argparse
import logging
from dataclasses import replace

from drivers import registry, storage
from drivers.engines.memory import BASE_BYTES
from drivers.families import TrainRequest
from drivers.spark_progress import watching
from drivers.models.infvoc import commands as infinite
from drivers.corpora import kept_columns
from drivers.store import model_root, model_store, publish
from inference.constraints import validate_options
from inference.errors import UsageError
from jobs.spark import add_spark_arguments, local_path, positive_int, sized_driver_conf, sized_session

log = logging.getLogger("spark_topics.train")

DEFAULT_MODEL = "lda"


def value_in(argv, flag: str, default=None):
    """The value of ``flag`` in a command line (``default`` when it has none)."""
    argv = list(argv or ())
    for i, item in enumerate(argv):
        if item == flag and i + 1 < len(argv):
            return argv[i + 1]
        if item.startswith(flag + "="):
            return item.split("=", 1)[1]
    return default


def model_in(argv) -> str:
    """The value of ``--model`` in a command line (the default model when it has none)."""
    return value_in(argv, "--model", DEFAULT_MODEL)


def add_arguments(parser: argparse.ArgumentParser, argv=None) -> None:
    """The flags of ``train`` for the model named in ``argv``: common, its family's, its own."""
    name = model_in(argv)
    base = registry.MODELS.get(name) or registry.model(DEFAULT_MODEL)
    spec = registry.model(base.name, value_in(argv, "--inference"))
    parser.add_argument("--model", choices=list(registry.MODELS), default=DEFAULT_MODEL,
                        help="the model to fit (see below); `train --model NAME --help` shows its own flags")
    parser.add_argument("--corpus", required=True, type=local_path,
                        help="CORPUS_DIR written by `spark-topics prepare`")
    parser.add_argument("--output", required=True, type=local_path, help="MODEL_DIR to write")
    parser.add_argument("--topics", "-k", type=int, required=True, help="number of topics K")
    parser.add_argument("--iterations", type=int, default=50, help="maximum EM iterations / Gibbs iterations")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--alpha", type=float, default=None,
                        help="initial symmetric alpha (default: 1/K variational, 0.1 Gibbs)")
    parser.add_argument("--fixed-alpha", action="store_true", help="do not optimise alpha")
    parser.add_argument("--partitions", type=positive_int, default=None,
                        help="document partitions (default: from the corpus size, not the cluster, "
                             "so results are reproducible anywhere)")
    parser.add_argument("--reducers", type=positive_int, default=None, help="topic reducers R (default: min(K, cores))")
    parser.add_argument("--checkpoint-dir", default=None, type=local_path,
                        help="where the run keeps its checkpoint: its own subfolder of this directory, the only "
                             "thing it deletes (default: MODEL_DIR/_checkpoint)")
    parser.add_argument("--resume", action="store_true", help="continue from the last checkpoint")
    parser.add_argument("--keep-checkpoint", action="store_true", help="keep the checkpoint after success")
    parser.add_argument("--top-words", type=int, default=10, help="words per topic in the printed summary")
    infinite.add_flags(parser.add_argument_group("online LDA with an infinite vocabulary (--model lda)"), True, parser)
    family = spec.family_object()
    family.add_train_flags(parser.add_argument_group(
        f"{family.name} family ({', '.join(s.name for s in registry.models_of(family.name))})"))
    if spec.family == base.family and base.default_inference:     # the model's own default of its family's flag
        parser.set_defaults(inference=base.default_inference)
    other_engines = registry.inference_modes(base.name) if spec.family == base.family else ()
    family_inference = parser._option_string_actions.get("--inference")
    if other_engines and family_inference is not None and family_inference.choices:
        family_inference.choices = (*family_inference.choices, *other_engines)   # --help lists every engine
        family_inference.help += "; " + "; ".join(
            f"{mode}: on the {family_name.capitalize()} engine (`--inference {mode} --help`: its flags)"
            for mode, family_name, _ in base.engines)
    own = parser.add_argument_group(f"--model {spec.name}: {spec.summary}")
    if spec.family != base.family:           # another engine of the model: its family's flags, and this one
        own.add_argument("--inference", choices=registry.inference_modes(base.name), required=True,
                         help=f"{spec.family_object().kind} inference of --model {base.name}")
    for option in spec.options:
        if option.type is bool:
            own.add_argument(option.flag, dest=option.name, action="store_true", help=option.help)
        else:
            own.add_argument(option.flag, dest=option.name, type=local_path if option.path else option.type,
                             default=option.default,
                             metavar=option.metavar, help=option.help)
    parser.epilog = "models (corpus they need):\n" + "\n".join(
        f"  {s.name:<10} {s.family:<12} {s.corpus:<18} {s.summary}" for s in registry.MODELS.values())
    parser.formatter_class = argparse.RawDescriptionHelpFormatter


def request_from(args) -> TrainRequest:
    """The typed request of a parsed ``train`` command line."""
    spec = registry.model(args.model, getattr(args, "inference", None))
    return TrainRequest(
        model=spec.name, corpus=str(args.corpus), output=str(args.output), topics=args.topics,
        iterations=args.iterations, seed=args.seed, alpha=args.alpha, fixed_alpha=args.fixed_alpha,
        partitions=args.partitions, reducers=args.reducers, checkpoint_dir=args.checkpoint_dir,
        resume=args.resume, keep_checkpoint=args.keep_checkpoint, top_words=args.top_words,
        engine=spec.family_object().train_settings(args),
        options={option.name: getattr(args, option.name) for option in spec.options}, model_options=spec.options,
        inference=getattr(args, "inference", None) if spec.family != registry.model(args.model).family else None)


def unknown_arguments(args, unknown: list) -> str:
    """A one-line refusal of flags the model does not take, naming the models that do."""
    spec = registry.model(args.model, getattr(args, "inference", None))
    flags = [item.split("=", 1)[0] for item in unknown if item.startswith("-")]
    owners = {flag: [s for s in registry.MODELS.values() if flag in _flags_of(s.name)] for flag in flags}
    for mode in registry.inference_modes(spec.name):       # a flag of the model's other engine
        theirs = [flag for flag in flags if flag in _flags_of(spec.name, mode)]
        if theirs and getattr(args, "inference", None) != mode:
            return f"--model {spec.name} takes {', '.join(theirs)} with --inference {mode}"
    known = [flag for flag in flags if owners[flag]]
    if not known:
        return f"unrecognized arguments: {' '.join(unknown)}"
    names = ", ".join(dict.fromkeys(s.name for flag in known for s in owners[flag]))
    families = {s.family for flag in known for s in owners[flag]}
    if spec.family not in families and len(families) == 1:
        other = registry.family(families.pop())
        return (f"--model {spec.name} is {spec.family_object().kind}: {', '.join(known)} only apply to the "
                f"{other.kind} models ({names})")
    return f"--model {spec.name} does not take {', '.join(known)} (a flag of {names})"


def _flags_of(name: str, inference: str | None = None) -> set:
    parser = argparse.ArgumentParser(add_help=False)
    add_arguments(parser, ["--model", name] + (["--inference", inference] if inference else []))
    return set(parser._option_string_actions)


def parse_request(argv) -> TrainRequest:
    """``train`` flags -> TrainRequest, as the command line parses them (Spark flags accepted and ignored)."""
    argv = [str(a) for a in argv]
    parser = argparse.ArgumentParser(prog="spark-topics train")
    add_arguments(parser, argv)
    add_spark_arguments(parser)
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        raise UsageError(unknown_arguments(args, unknown))
    return request_from(args)


def train(spark, request: TrainRequest) -> dict:
    """Fit the requested model and publish its directory whole (:mod:`drivers.store.publish`: written aside, marked
    complete, moved into place); returns model.json's content. The run holds the output's lease
    (:mod:`drivers.store.lease`): a second run on the same output refuses while this one lives."""
    spec = registry.model(request.model, request.inference)
    validate_options(request.options, spec.options)      # a request made without its model's options
    output = request.output
    if model_root.is_root(output):
        raise UsageError(f"{output} is a model root (it has versions/): train into a new directory and refresh "
                         f"the root from it, or pass another --output")
    with publish.published(output, f"spark-topics train --model {spec.name}", model_store.is_model_file) as staging:
        if storage.exists(storage.join(output, "model.json")) and not request.resume:
            log.warning("replacing the model in %s when this run completes", output)
        with watching(spark, "train", between_steps=True):
            meta = spec.family_object().train(spark, spec, replace(request, output=staging, final_output=output))
        kept = kept_columns.carry_into(storage.join(staging, "doc_topics.parquet"), request.corpus)
        if kept:                                  # model.json says which columns doc_topics carries
            path = storage.join(staging, "model.json")
            storage.save_json(path, dict(storage.load_json(path), kept_columns=kept))
            meta = dict(meta, kept_columns=kept)
        return meta


def driver_memory(request: TrainRequest, conf: list, active_session) -> list:
    """``conf`` with ``spark.driver.memory`` sized from the model (K x V from the corpus' corpus.json) when this
    job creates a local session and the user did not set it; a run that cannot fit is refused up front."""
    meta_path = storage.join(request.corpus, "corpus.json")
    if not storage.exists(meta_path):
        return conf                                   # the family says what is missing
    meta = storage.load_json(meta_path)
    vocab = meta.get("vocab_size")
    if isinstance(vocab, dict) or vocab is None:      # an aligned corpus: the languages' vocabularies
        vocab = sum((meta.get("vocab_sizes") or {}).values()) if isinstance(meta.get("vocab_sizes"), dict) else 0
    spec = registry.model(request.model, request.inference)
    tokens = meta.get("tokens") if isinstance(meta.get("tokens"), int) else None
    needed = BASE_BYTES + spec.family_object().driver_bytes(request.topics, int(vocab or 0), spec, tokens)
    return sized_driver_conf(needed, conf, active_session, f"K={request.topics} x V={int(vocab or 0)}")


def run(args) -> dict:
    if args.vocabulary == "infinite":
        return run_infinite(args)
    request = request_from(args)
    spark = sized_session("spark-topics train", args,
                          lambda conf, active: driver_memory(request, conf, active))
    meta = train(spark, request)
    print(storage.read_bytes(storage.join(request.output, "topics.txt")).decode("utf-8"), end="")
    print(registry.model(request.model, request.inference).family_object().train_summary(meta, request))
    return meta


def run_infinite(args) -> dict:
    """``train --vocabulary infinite`` (:mod:`drivers.models.infvoc.commands`)."""
    if args.model != "lda":
        raise UsageError(f"--vocabulary infinite is online LDA: --model {args.model} does not take it")
    spark = sized_session("spark-topics train --vocabulary infinite", args, lambda conf, active: conf)
    meta = infinite.train(spark, args)
    print(storage.read_bytes(storage.join(args.output, "topics.txt")).decode("utf-8"), end="")
    print(f"trained --vocabulary infinite: {meta['documents']} documents in {meta['minibatches']} minibatches "
          f"({meta.get('passes', 1)} passes, --expand {meta['settings']['expand']}), "
          f"topic sizes {min(meta['tos_sizes'])}-{max(meta['tos_sizes'])} words -> {args.output}")
    return meta


if __name__ == "__main__":
    import os
    import sys
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from jobs.cli import job_main
    sys.exit(job_main("train"))
