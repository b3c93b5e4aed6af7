"""The training engines: each runs any model of its family over a corpus on Spark (``gibbs/``: per-partition
samplers synchronised through named count tables)."""
