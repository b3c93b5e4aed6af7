"""A refreshed root's batches keep the columns its model's training corpus kept (``prepare --keep-columns``: a
document's authors, date, ...): the refresh carries them from the batch's input into its prepared corpus, so the
model reads them there as it read its training corpus' (cluster-lda's ``--author-column``)."""
from __future__ import annotations

from drivers import storage


def columns_to_keep(meta: dict) -> list[str]:
    """The input columns a batch of the model of ``meta`` (model.json) keeps: its ``kept_columns`` and the author
    variant's ``author_column``."""
    columns = list(meta.get("kept_columns") or ())
    if meta.get("author_column") and meta["author_column"] not in columns:
        columns.append(meta["author_column"])
    return columns


def carry_input_columns(spark, request, input_dir: str, columns: list[str]) -> None:
    """Add the input's ``columns`` (read as ``prepare --keep-columns`` reads them) to the rows to ingest in
    ``input_dir`` (Parquet: id, text), matched by id, so ``prepare --keep-columns`` keeps them in the batch's
    corpus."""
    from drivers.preparation.reading import read_documents

    rows = read_documents(spark, request.input, format=request.format, id_column=request.id_column,
                          text_column=request.text_column, keep_columns=tuple(columns))
    values = rows.where("reason IS NULL").select(rows["doc_id"].alias("id"), *columns).dropDuplicates(["id"])
    moved = input_dir.rstrip("/") + ".before-columns"
    storage.move(input_dir, moved)
    spark.read.parquet(moved).select("id", "text").join(values, "id", "left").write.parquet(input_dir)
    storage.delete(moved)
