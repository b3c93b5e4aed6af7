"""The held-out split without Spark (drivers/preparation/id_hash.py) is Spark's: the same hash of every id, and the
same corpora from ``prepare --holdout-fraction`` in this process and with Spark."""
from __future__ import annotations

import json

import pyarrow.parquet as pq
from pyspark.sql import functions as F

from drivers.preparation import id_hash
from drivers.preparation.holdout import is_heldout
from jobs.cli import main

IDS = ["", "a", "doc001", "δοκιμή", "long id " * 9, "x" * 31, "y" * 32, "z" * 33, "12345678", "1234", "日本語の文書",
       "doc with spaces and more than thirty-two bytes in it, really"]


def test_xxhash64_is_sparks(spark_session):
    frame = spark_session.createDataFrame([(i,) for i in IDS] + [(None,)], "id string")
    spark = {r[0]: (r[1], r[2]) for r in frame.select("id", F.xxhash64("id"), is_heldout(F.col("id"), 0.37)).collect()}
    for doc_id, (expected, held) in spark.items():
        assert (id_hash.SEED if doc_id is None else id_hash.xxhash64(doc_id.encode("utf-8"))) == expected, doc_id
        assert id_hash.is_heldout(doc_id, 0.37) == held, doc_id


def test_both_engines_split_alike(spark_session, tmp_path):
    rows = [{"id": f"doc{d:03d}", "text": f"river boat water fish {'star moon' if d % 2 else 'bread oven'} {d}"}
            for d in range(40)]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = {}
    for engine, master, flag in (("in-process", "none", "--holdout-fraction"),
                                 ("spark", "local[2]", "--heldout-fraction")):     # train's spelling: the same option
        out[engine] = str(tmp_path / engine)
        assert main(["prepare", "--input", str(tmp_path / "in.jsonl"), "--output", out[engine], "--min-df", "1",
                     "--max-df", "1.0", flag, "0.3", "--master", master]) == 0
    for part in ("", "/heldout"):
        tables = [pq.read_table(f"{out[e]}{part}/docs.parquet").to_pandas().sort_values("doc_id")
                  .reset_index(drop=True) for e in out]
        assert tables[0]["doc_id"].tolist() == tables[1]["doc_id"].tolist() and len(tables[0]) > 0
        assert [list(x) for x in tables[0]["term_ids"]] == [list(x) for x in tables[1]["term_ids"]]
