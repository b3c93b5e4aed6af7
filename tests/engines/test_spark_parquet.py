"""Reading our Parquet files into Spark without Spark's schema job (:mod:`drivers.spark_parquet`): the same frame
as ``spark.read.parquet``, no job until an action, and Spark's own inference where the footer cannot say it all."""
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from drivers.spark_parquet import read_parquet
from spark_jobs import job_count


def _rows(frame):
    return sorted(tuple(tuple(v) if isinstance(v, list) else v for v in row) for row in frame.collect())


@pytest.fixture
def docs(tmp_path):
    """A docs.parquet of a prepared corpus (the in-process writer's types), as a directory of two files."""
    path = tmp_path / "docs.parquet"
    path.mkdir()
    for part, ids in enumerate((["a", "b"], ["c"])):
        table = pa.table({"doc_id": ids, "term_ids": [[0, 3]] * len(ids), "counts": [[2, 1]] * len(ids),
                          "n_tokens": np.full(len(ids), 3, dtype=np.int32)},
                         schema=pa.schema([("doc_id", pa.string()), ("term_ids", pa.list_(pa.int32())),
                                           ("counts", pa.list_(pa.int32())), ("n_tokens", pa.int32())]))
        pq.write_table(table, path / f"part-{part:05d}.parquet")
    return str(path)


def test_the_same_frame_without_a_schema_job(spark_session, docs):
    before = job_count(spark_session)
    frame = read_parquet(spark_session, docs)
    assert job_count(spark_session) == before        # spark.read.parquet(docs) runs one job here
    inferred = spark_session.read.parquet(docs)
    assert frame.schema.simpleString() == inferred.schema.simpleString() == \
        "struct<doc_id:string,term_ids:array<int>,counts:array<int>,n_tokens:int>"
    assert _rows(frame) == _rows(inferred) and len(_rows(frame)) == 3


def test_partition_folders_and_damaged_files_are_spark_s_to_read(spark_session, tmp_path, docs):
    """key=value folders get Spark's partition column (its inferred type); a damaged footer fails in Spark, as the
    callers' one-line refusals expect."""
    root = tmp_path / "doc_topics"
    for version in ("base", "000001"):
        (root / f"version={version}").mkdir(parents=True)
        pq.write_table(pa.table({"doc_id": ["x"]}), root / f"version={version}" / "part-0.parquet")
    frame = read_parquet(spark_session, str(root))
    assert sorted(frame.columns) == ["doc_id", "version"] and frame.count() == 2

    damaged = tmp_path / "damaged.parquet"
    damaged.write_bytes(open(f"{docs}/part-00000.parquet", "rb").read()[:-20])
    with pytest.raises(Exception) as caught:
        read_parquet(spark_session, str(damaged)).collect()
    from drivers.failures import is_spark_failure
    assert is_spark_failure(caught.value)
