"""Inference with a variational family's model: the fold-in E-step over a prepared corpus on Spark (``infer``), the
model's exp E_q[log beta] and a corpus opened against the model's vocabulary."""
from __future__ import annotations

import re
from functools import partial

import numpy as np

from drivers import storage
from drivers.corpora.aligned import aligned_vocab, is_aligned, load_aligned_corpus
from drivers.corpora import in_process as local_corpus
from drivers.corpora.bow import Corpus, chosen_partitions, open_corpus_meta, reading
from drivers.corpora.files import CORPUS_JSON, DOCS, REJECTS, rejects_schema, require_corpus
from drivers.spark_parquet import read_parquet
from drivers.store.model_store import load_model, require_same_vocabulary
from drivers.store.topic_model import TopicModel
from inference.errors import UsageError
from inference.blocks import DocBlock
from inference.heldout import fold_in, word_factor
from inference.mapper import EStepSettings


def name_words(message: str, vocab) -> str:
    """``message`` with every "word id N" followed by the word itself (and its language)."""
    terms = dict(zip(vocab["id"].astype(int), vocab["term"]))
    languages = dict(zip(vocab["id"].astype(int), vocab["lang"])) if "lang" in vocab.columns else {}

    def name(match):
        i = int(match.group(1))
        if i not in terms:
            return match.group(0)
        return f"word id {i} ({terms[i]!r}" + (f", {languages[i]})" if i in languages else ")")
    return re.sub(r"word id (\d+)", name, message)


def exp_elogbeta(model: TopicModel) -> tuple[np.ndarray, np.ndarray]:
    """The fold-in's word factor: exp(E_q[log beta_kv]) = exp(Psi(lambda_kv) - Psi(sum_v lambda_kv)), K x V (sums
    within a language), each word's column scaled to a maximum of 1, and the (V,) logs of the scales
    (:func:`inference.heldout.word_factor`; pass them to ``fold_in(log_scale=...)`` for the exact ELBO)."""
    return word_factor(model.layout.dirichlet_expectation(model.lambda_))


def model_for_corpus(model: TopicModel | str, corpus_dir: str, lang: str | None = None):
    """``(model, layout)``: the model as it reads the corpus, after checking that they share the vocabulary, and
    the :class:`inference.layout.VocabLayout` of the aligned corpus' languages it reads (None: a monolingual
    corpus). No Spark job: the corpus' files are read only for their vocabularies.

    A polylingual model reads either one language (``lang``: the model's view of that
    language, a monolingual corpus) or an aligned corpus (every language of a tuple).
    """
    model = load_model(model) if isinstance(model, str) else model
    if model.languages and lang is None and is_aligned(corpus_dir):
        require_corpus(corpus_dir)
        corpus_langs = storage.load_json(storage.join(corpus_dir, CORPUS_JSON))["languages"]
        vocab, layout = aligned_vocab(corpus_dir, [l for l in model.languages if l in corpus_langs] or corpus_langs)
        shell = Corpus(corpus_dir, {}, vocab, None, 0)
        for language in layout.languages:
            require_same_vocabulary(model.language_view(language), language_vocabulary(shell, language))
        if layout.languages != tuple(model.languages):  # a subset: the model's columns of those languages
            keep = np.concatenate([np.arange(model.layout.slice_of(l).start, model.layout.slice_of(l).stop)
                                   for l in layout.languages])
            model = type(model)(model.directory, dict(model.meta, languages=list(layout.languages)),
                                model.vocab.iloc[keep].reset_index(drop=True), model.lambda_[:, keep])
        return model, layout
    if model.languages:
        if lang is None:
            raise UsageError(f"{model.directory} is polylingual ({', '.join(model.languages)}): pass --lang for "
                             f"documents in one language, or an aligned corpus (prepare --lang-column)")
        model = model.language_view(lang)
    elif lang is not None:
        raise UsageError(f"--lang applies to polylingual models; {model.directory} is monolingual")
    meta, vocab = open_corpus_meta(None, corpus_dir)
    require_same_vocabulary(model, Corpus(corpus_dir, meta, vocab, None, 0))
    return model, None


def open_model_and_corpus(spark, model: TopicModel | str, corpus_dir: str, partitions: int | None = None,
                          lang: str | None = None):
    """The model and the corpus as blocks, after checking that they share the vocabulary
    (:func:`model_for_corpus`; ``spark`` None: a monolingual corpus, its blocks loaded in this process)."""
    model, layout = model_for_corpus(model, corpus_dir, lang)
    if layout is not None:
        return model, load_aligned_corpus(spark, corpus_dir, partitions, list(layout.languages))
    return model, local_corpus.opened(spark, corpus_dir, partitions)


def language_vocabulary(corpus: Corpus, language: str) -> Corpus:
    """A Corpus shell with one language's vocabulary of an aligned corpus (for vocabulary checks)."""
    part = corpus.vocab[corpus.vocab["lang"] == language]
    vocab = part.assign(id=part["local_id"]).reset_index(drop=True)
    return Corpus(storage.join(corpus.directory, language), {}, vocab, None, 0)


def infer_task(items, bc_params, options: EStepSettings):
    """Spark task: gamma and theta of every document of the partition's block."""
    (topic_word, _), alpha = bc_params.value
    for _, block in items:
        fit = fold_in(block, topic_word, alpha, options.tol, options.max_iter)
        for doc_id, gamma, theta in zip(block.doc_ids, fit.gamma.tolist(), fit.theta.tolist()):
            yield str(doc_id), gamma, theta


def empty_documents(spark, corpus_dir: str):
    """Ids of the documents ``prepare`` rejected as ``empty`` (no known word), as a DataFrame."""
    from pyspark.sql import functions as F

    path = storage.join(corpus_dir, REJECTS)
    if not storage.exists(path):
        return spark.createDataFrame([], "doc_id string")
    return (spark.read.schema(rejects_schema()).json(path).where(F.col("reason") == "empty")
            .select(F.col("id").alias("doc_id")))


#: the rows :func:`doc_topics_table` reads: a document's words in one language (``lang_index``: its place in the
#: aligned corpus' layout, 0 in a monolingual corpus), or (``empty``) the id of a document prepare rejected as empty
ROWS_SCHEMA = ("doc_id string, lang_index int, term_ids array<int>, counts array<int>, n_tokens long, "
               "n_unknown long, empty boolean")
#: what ``infer`` reports (:func:`table_counts`); each task of :func:`infer_documents` returns those of its part
COUNTS = ("documents", "known_tokens", "unknown_tokens", "no_known_words")


def _grouped_lists(column, starts: np.ndarray, n: int):
    """The list column's rows concatenated over each run of rows that begins at ``starts`` (n rows in all)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    lists = column.combine_chunks() if hasattr(column, "combine_chunks") else column
    ends = np.cumsum(pc.list_value_length(lists).fill_null(0).to_numpy(zero_copy_only=False))
    offsets = np.concatenate([[0], ends[np.concatenate([starts[1:] - 1, [n - 1]])]]).astype(np.int32)
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), lists.flatten())


def _summed(column, starts: np.ndarray):
    """Each run's sum of a (nullable) integer column: null where every value of the run is null (as SQL's sum)."""
    import pyarrow as pa

    values = column.to_numpy(zero_copy_only=False)
    valid = ~column.is_null().to_numpy(zero_copy_only=False)
    sums = np.add.reduceat(np.where(valid, values, 0).astype(np.int64), starts)
    return pa.array(sums, pa.int64(), mask=np.add.reduceat(valid.astype(np.int64), starts) == 0)


def doc_topics_table(rows, topic_word: np.ndarray, alpha: np.ndarray, options: EStepSettings):
    """``doc_topics`` of the documents of ``rows`` (an Arrow table of :data:`ROWS_SCHEMA`), sorted by id: doc_id,
    gamma and theta of the fold-in E-step (eq 3.4, the topics fixed) of every document with a known word (its rows
    of every language concatenated in layout order, its tokens summed), n_tokens, n_unknown, no_known_words; a
    document rejected as empty (and not among them) gets the prior (gamma = alpha, theta its mean, no tokens).
    Every document's gamma is fitted alone (the kernel converges per document), so the rows do not depend on
    which documents share ``rows``: the Spark job's tasks and the run in this process write the same numbers."""
    import pyarrow as pa
    import pyarrow.compute as pc

    empty = rows.column("empty").fill_null(False)
    known = rows.filter(pc.invert(empty)).sort_by([("doc_id", "ascending"), ("lang_index", "ascending")])
    n = known.num_rows
    ids = known.column("doc_id").to_numpy(zero_copy_only=False)
    starts = np.flatnonzero(np.concatenate([[True], ids[1:] != ids[:-1]])) if n else np.zeros(0, np.int64)
    tables = []
    if n:
        docs = pa.table({"doc_id": known.column("doc_id").take(pa.array(starts)),
                         "term_ids": _grouped_lists(known.column("term_ids"), starts, n),
                         "counts": _grouped_lists(known.column("counts"), starts, n)})
        fit = fold_in(DocBlock.from_arrow(docs), topic_word, alpha, options.tol, options.max_iter)
        tables.append(pa.table({
            "doc_id": docs.column("doc_id").combine_chunks(),
            "gamma": pa.array(fit.gamma.tolist(), pa.list_(pa.float64())),
            "theta": pa.array(fit.theta.tolist(), pa.list_(pa.float64())),
            "n_tokens": _summed(known.column("n_tokens"), starts),
            "n_unknown": _summed(known.column("n_unknown"), starts),
            "no_known_words": pa.array(np.zeros(len(starts), bool))}))
    fitted = set(ids.tolist())
    unknown_only = sorted(set(rows.filter(empty).column("doc_id").to_pylist()) - fitted)
    if unknown_only or not tables:
        m = len(unknown_only)
        tables.append(pa.table({
            "doc_id": pa.array(unknown_only, pa.string()),
            "gamma": pa.array([alpha.tolist()] * m, pa.list_(pa.float64())),
            "theta": pa.array([(alpha / alpha.sum()).tolist()] * m, pa.list_(pa.float64())),
            "n_tokens": pa.array([0] * m, pa.int64()), "n_unknown": pa.array([None] * m, pa.int64()),
            "no_known_words": pa.array([True] * m, pa.bool_())}))
    return pa.concat_tables(tables).sort_by("doc_id")


def table_counts(table) -> dict:
    """What ``infer`` reports of a doc_topics table: documents, known and unknown tokens, documents with no known
    words."""
    import pyarrow.compute as pc

    return {"documents": table.num_rows, "known_tokens": int(pc.sum(table.column("n_tokens")).as_py() or 0),
            "unknown_tokens": int(pc.sum(table.column("n_unknown")).as_py() or 0),
            "no_known_words": int(pc.sum(table.column("no_known_words").cast("int64")).as_py() or 0)}


def _write_partition(batches, bc_params, options: EStepSettings, path: str):
    """mapInArrow task: the doc_topics rows of the partition's documents written as its Parquet part; yields
    their counts."""
    import pyarrow as pa
    from pyspark import TaskContext

    batches = list(batches)
    rows = pa.Table.from_batches(batches) if batches else None
    counts = dict.fromkeys(COUNTS, 0)
    if rows is not None and rows.num_rows:
        (topic_word, _), alpha = bc_params.value
        table = doc_topics_table(rows, topic_word, alpha, options)
        storage.write_parquet(storage.join(path, f"part-{TaskContext.get().partitionId():05d}.parquet"), table)
        counts = table_counts(table)
    yield pa.RecordBatch.from_pydict({k: pa.array([v], pa.int64()) for k, v in counts.items()})


def infer_documents(spark, model: TopicModel | str, corpus_dir: str, output_dir: str,
                    options: EStepSettings | None = None, partitions: int | None = None,
                    lang: str | None = None) -> dict:
    """Topic proportions of every document of a prepared corpus; writes OUT_DIR/doc_topics.parquet, its rows
    sorted by document id (:func:`doc_topics_table`).

    One pass: the documents (every language's rows of an aligned corpus) and the ids prepare rejected as empty
    are range-partitioned by id into the corpus' partitions (:func:`drivers.corpora.bow.chosen_partitions`), and
    each task folds its documents in and writes its part; the counts come back from the tasks (no re-read).
    Returns the counts printed by the job: documents, known and unknown tokens, documents with no known words.
    """
    from pyspark.sql import functions as F

    options = options or EStepSettings()
    model, layout = model_for_corpus(model, corpus_dir, lang)
    meta = storage.load_json(storage.join(corpus_dir, CORPUS_JSON))
    P = chosen_partitions(partitions, int(meta["documents"]), meta.get("tokens"))
    parts = ([(storage.join_inside(corpus_dir, l, "a language"), offset)
              for l, offset in zip(layout.languages, layout.offsets)] if layout is not None else [(corpus_dir, None)])
    rows = None
    for i, (part, offset) in enumerate(parts):
        words = F.col("term_ids") if offset is None else F.transform("term_ids", lambda t: t + F.lit(int(offset)))
        docs = read_parquet(spark, storage.join(part, DOCS)).select(
            F.col("doc_id").cast("string").alias("doc_id"), F.lit(i).alias("lang_index"),
            words.cast("array<int>").alias("term_ids"), F.col("counts").cast("array<int>").alias("counts"),
            F.col("n_tokens").cast("long").alias("n_tokens"), F.col("n_oov").cast("long").alias("n_unknown"),
            F.lit(False).alias("empty"))
        empty = empty_documents(spark, part).select(
            F.col("doc_id").cast("string").alias("doc_id"), F.lit(None).cast("int").alias("lang_index"),
            F.lit(None).cast("array<int>").alias("term_ids"), F.lit(None).cast("array<int>").alias("counts"),
            F.lit(None).cast("long").alias("n_tokens"), F.lit(None).cast("long").alias("n_unknown"),
            F.lit(True).alias("empty"))
        for frame in (docs, empty):
            rows = frame if rows is None else rows.unionByName(frame)
    path = storage.join(output_dir, "doc_topics.parquet")
    if storage.exists(path):
        storage.delete(path)
    sc = spark.sparkContext
    sc.setJobDescription("infer: E-step with the model's topics")
    bc_params = sc.broadcast((exp_elogbeta(model), model.alpha))
    try:
        written = rows.repartitionByRange(P, "doc_id").mapInArrow(
            partial(_write_partition, bc_params=bc_params, options=options, path=path),
            ", ".join(f"{key} long" for key in COUNTS))
        with reading(corpus_dir):
            counts = written.collect()
    finally:
        bc_params.destroy()
        sc.setJobDescription(None)
    return {**{key: int(sum(row[key] for row in counts)) for key in COUNTS}, "output": path}
