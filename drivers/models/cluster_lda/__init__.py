"""cluster-lda: the cluster-based topic model (Wallach §5.3): ``model.py`` the GibbsModel, ``kernels.py`` its numba
kernels.

Hyperparameters, after every synchronisation (``sample_hyper``; 5 iterations of multidimensional slice sampling,
Alg. 3.2, in log space, under a vague Gamma(1, 1000) hyperprior on each), each group under its factor of the
evidence (5.28) at the current assignments, as the thesis does (§5.3.2): zeta under P(c | zeta) (5.30); beta
under P(w | z, beta) (5.15); (alpha, alpha1, alpha0) together under the sequential evidence P(z | c) (5.16), every
token's predictive (5.7) with the counts of the tokens before it under the path assumption (both paths); the
author variant's (eta1, eta0) under P(a | c) (5.59). The sequential evidence needs every document's cluster and
topics in order: the partitions send them as their statistics and the driver makes one pass per synchronisation
(:mod:`drivers.models.cluster_lda.evidence`).

Tables: ``nwk`` (V x T); ``clusters`` keyed by cluster id, a row [N_c, M_c1..M_cT, N_a1|c..N_aA|c] (the author
columns: :mod:`drivers.models.cluster_lda.authors`). State: ``z`` per token,
``cluster`` per document. Outputs: ``topic_word.npy`` (mean of the samples), and of the final state (labels mean
nothing across samples) ``doc_topics.parquet`` (the predictive (5.7)), ``doc_clusters.parquet``, the clusters'
counts (``cluster_*.npy``) and their sizes in ``model.json``. Held-out and new documents: the model's own sampler
with the topics and the training clusters frozen (:mod:`inference.gibbs.heldout`); left-to-right:
:mod:`drivers.models.cluster_lda.left_to_right`.
"""
