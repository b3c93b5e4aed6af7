"""The training engines: each runs any model of its family over a corpus on Spark (``variational/``: Mr. LDA's
mapper -> partitioner -> reducer EM; ``gibbs/``: per-partition samplers synchronised through named count tables),
and the Spark memory both are sized with (``memory``)."""
