"""Read a Parquet file or directory into Spark without Spark's schema job.

``spark.read.parquet(path)`` without a schema runs a Spark job to read the footers before anything else (Spark's
``mergeSchemasInParallel``, whatever the number of files): one job per read, a tenth of a second or more each,
paid by every small train, infer, evaluate and refresh (2-3 reads per command). The footer of the first file holds
the same schema Spark would infer without ``mergeSchema``; read on the driver with pyarrow (local paths and every
pyarrow filesystem URI, :mod:`drivers.storage`) it is handed to Spark, which then reads no footer in a job.
A directory of Hive partitions (``key=value`` folders: Spark adds those columns with types it infers; any ``=`` in
a file's path counts), an empty
one or a file pyarrow cannot read (a damaged footer: Spark's own read then fails as it always did, and the caller
refuses it in one line) are read by Spark as before."""
from __future__ import annotations

from drivers import storage


def _footer_schema(path: str):
    """The Spark schema of the first Parquet file under ``path``, or None where Spark should infer it itself."""
    import pyarrow.dataset as ds
    from pyspark.sql.pandas.types import from_arrow_schema

    try:
        filesystem, local = storage.resolve(path)
        dataset = ds.dataset(local, filesystem=filesystem, format="parquet")
        if not dataset.files or any("=" in f for f in dataset.files) or not dataset.schema.names:
            return None
        return from_arrow_schema(dataset.schema, prefer_timestamp_ntz=False)
    except Exception:   # noqa: BLE001 - anything pyarrow cannot read or map: Spark reads (and reports) it as before
        return None


def read_parquet(spark, path: str):
    """``spark.read.parquet(path)``, the schema taken from the first file's footer on the driver (no schema job)."""
    schema = _footer_schema(path)
    reader = spark.read if schema is None else spark.read.schema(schema)
    return reader.parquet(path)
