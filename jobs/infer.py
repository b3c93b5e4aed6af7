"""``spark-topics infer``: topic proportions of new documents under a trained model.

The model directory says which model it holds; the registry
(:mod:`drivers.registry`) gives its family, which opens the model and infers
(variational: the E-step with the topics fixed; Gibbs: the model's own sampler
with the topics fixed; see :mod:`drivers.families`).

``--input`` is either a prepared corpus directory (it has ``corpus.json``) that
shares the model's vocabulary, or raw text in any format ``prepare`` reads; raw
text is first prepared into ``OUT_DIR/corpus`` with the model's vocabulary and
the tokenizer (and segments) of its training corpus, so words the model never
saw are ignored and counted as unknown.
"""
from __future__ import annotations

import argparse
import logging
from dataclasses import replace

from drivers import registry, storage
from drivers.corpora.files import CORPUS_JSON, looks_like_corpus
from drivers.families import InferRequest
from drivers.models.infvoc import model as infinite_model, scoring as infinite_scoring
from drivers.preparation.corpus import prepare_corpus
from drivers.spark_progress import watching
from drivers.corpora import kept_columns
from drivers.store import model_root, model_store, publish
from inference.errors import UsageError
from jobs.flags import add_model_dir
from jobs.spark import engine_of, fold_in_conf, local_path, positive_int, sized_session

log = logging.getLogger("spark_topics.infer")


def add_arguments(parser: argparse.ArgumentParser, argv=None) -> None:
    add_model_dir(parser, "MODEL_DIR written by `spark-topics train`, or a model ROOT (its LATEST version)")
    parser.add_argument("--version", default=None,
                        help="a model root's version to read (default: its LATEST; a number like 000003 is enough)")
    parser.add_argument("--input", required=True, metavar="PATH", type=local_path,
                        help="a prepared corpus directory with the model's vocabulary, or raw text "
                             "(any input of `spark-topics prepare`)")
    parser.add_argument("--output", required=True, metavar="OUT_DIR", type=local_path,
                        help="writes OUT_DIR/doc_topics.parquet (and OUT_DIR/corpus for raw input)")
    parser.add_argument("--format", default="auto", help="raw input format, as in `prepare` (default: auto)")
    parser.add_argument("--id-column", default="id", help="document id column of raw JSON/CSV/Parquet input")
    parser.add_argument("--text-column", default="text", help="text column of raw JSON/CSV/Parquet input")
    parser.add_argument("--lang", default=None,
                        help="polylingual model: the language of the input documents (a new document in one "
                             "language); an aligned corpus (prepare --lang-column) as input uses every language "
                             "of each tuple")
    parser.add_argument("--partitions", type=positive_int, default=None, help="document partitions (default: by size)")
    for family in registry.families():
        family.add_infer_flags(parser.add_argument_group(
            f"{family.name} models ({', '.join(s.name for s in registry.models_of(family.name))})"))


#: what ``infer`` writes in OUT_DIR (the rest is the user's, kept when a new output replaces it)
OUTPUTS = ("doc_topics.parquet", "segment_topics.parquet", "corpus")


def is_prepared_corpus(path: str) -> bool:
    """A corpus directory (complete or not: an incomplete one is refused when it is read), not raw text."""
    return looks_like_corpus(path)


def refuse_output_that_holds_data(output: str) -> None:
    """``infer --output`` must not be a model directory, a model root or a prepared corpus: writing
    ``doc_topics.parquet`` there would replace the model's own (every job then refuses the model as damaged)."""
    for marker, what in (("model.json", "a model directory"), (model_root.LATEST, "a model root"),
                         ("versions", "a model root"), (CORPUS_JSON, "a prepared corpus")):
        if storage.exists(storage.join(output, marker)):
            raise UsageError(f"spark-topics infer: --output {output} is {what} ({marker}); give infer a folder "
                             f"of its own")


def infer(spark, request: InferRequest) -> dict:
    """Topic proportions of every document of ``request.input`` (prepared first when it is raw text), published
    whole at ``request.output`` (:mod:`drivers.store.publish`: a run killed at any point leaves the earlier results
    or the
    new ones, never a mix or an empty table; the user's other files there are kept); the run holds the output's
    lease (:mod:`drivers.store.lease`)."""
    refuse_output_that_holds_data(request.output)
    with publish.published(request.output, "spark-topics infer", OUTPUTS.__contains__) as staging:
        result = _infer(spark, replace(request, output=staging))
        if is_prepared_corpus(request.input):
            kept_columns.carry_into(storage.join(staging, "doc_topics.parquet"), request.input)
    return {key: request.output + value[len(staging):] if isinstance(value, str) and value.startswith(staging)
            else value for key, value in result.items()}


def _infer(spark, request: InferRequest) -> dict:
    """``spark``: a SparkSession, or a function that makes one when first needed (a small input is prepared and
    inferred in this process, where its family can: ``request.runs_on``)."""
    meta = model_store.read_meta(request.model_dir)
    if infinite_model.is_infinite(meta):       # any word scored: raw text keeps every word the tokenizer keeps
        corpus_dir = request.input
        if not is_prepared_corpus(request.input):
            corpus_dir = storage.join(request.output, "corpus")
            infinite_scoring.raw_corpus(spark, request.model_dir, meta, request, corpus_dir)
        return infinite_scoring.infer(spark, request.model_dir, corpus_dir, request.output, request.partitions)
    family = registry.model_of_directory(request.model_dir).family_object()
    trained = family.open(request.model_dir)
    corpus_dir, prepared = request.input, None
    if not is_prepared_corpus(request.input):
        corpus_dir = storage.join(request.output, "corpus")
        log.info("preparing %s with the model's vocabulary into %s", request.input, corpus_dir)
        prepared = prepare_corpus(spark, request.input, corpus_dir, request.runs_on,
                                  **family.raw_text_options(trained, request))
    if request.runs_on != "spark":
        why_not = family.why_not_in_process(trained, corpus_dir, request)
        if why_not is None:
            log.info("inferring in this process (no Spark job)")
            return family.infer_in_process(trained, corpus_dir, request, prepared)
        if request.runs_on == "in-process":
            raise UsageError(f"spark-topics infer: --master none: cannot infer without Spark: {why_not}")
    session = spark() if callable(spark) else spark
    with watching(session, "infer"):
        return family.infer(session, trained, corpus_dir, request, prepared)


def infer_documents(spark, model_dir: str, corpus_dir: str, output_dir: str, partitions: int | None = None,
                    lang: str | None = None, engine=None) -> dict:
    """``infer`` of a prepared corpus with the family's default settings (or ``engine``)."""
    return infer(spark, InferRequest(model_dir, corpus_dir, output_dir, lang=lang, partitions=partitions,
                                     engine=engine))


def run(args) -> dict:
    args.model = model_store.resolve(args.model, getattr(args, "version", None))     # one version for the job
    infinite = infinite_model.is_infinite(model_store.read_meta(args.model))
    family = None if infinite else registry.model_of_directory(args.model).family_object()
    request = InferRequest(args.model, args.input, args.output, args.format, args.id_column, args.text_column,
                           args.lang, args.partitions, engine=None if infinite else family.infer_settings(args),
                           runs_on=engine_of(args.master))
    result = infer(lambda: sized_session("spark-topics infer", args,
                                         lambda conf, active: fold_in_conf([args.model], conf, active)), request)
    print(f"inferred {result['documents']} documents -> {result['output']}" if infinite else
          family.infer_summary(result, request))
    return result


if __name__ == "__main__":
    import os
    import sys
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from jobs.cli import job_main
    sys.exit(job_main("infer"))
