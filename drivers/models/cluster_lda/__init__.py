"""cluster-lda: the cluster-based topic model (Wallach §5.3): ``model.py`` the GibbsModel, ``kernels.py`` its numba
kernels.

Hyperparameters, after every synchronisation (``sample_hyper``; 5 slice-sampling iterations each, Alg. 3.2, in
log space, under a vague Gamma(1, 1000) hyperprior): zeta under P(c | zeta) (5.30); beta under P(w | z, beta)
(5.15); and, under the minimal path assumption, alpha, alpha1 and alpha0 under the probability of the seating
that the assumption imputes (one table per distinct topic of a document, of a cluster, of the corpus): at a level
of concentration a, prod_r a^{J_r} Gamma(a) / Gamma(a + n_r) over its restaurants r (J_r tables, n_r customers;
Teh et al. 2006). This deviates from the thesis, which slice-samples under the sequential evidence (3.55): that
depends on the order of all documents and needs a pass over the corpus per density evaluation (extract §6.2);
the seating probability needs only the summed tables (and the histogram of document lengths, a table of its
own). Under ``--path maximal`` every token is its own table, which says nothing about the concentrations (its
probability grows without bound in each), so alpha, alpha1 and alpha0 keep their given values there.

Tables: ``nwk`` (V x T); ``clusters`` keyed by cluster id, a row [N_c, M_c1..M_cT, N_a1|c..N_aA|c] (the author
columns: :mod:`drivers.models.cluster_lda.authors`); ``document_lengths`` keyed by length. State: ``z`` per token,
``cluster`` per document. Outputs: ``topic_word.npy`` (mean of the samples), and of the final state (labels mean
nothing across samples) ``doc_topics.parquet`` (the predictive (5.7)), ``doc_clusters.parquet``, the clusters'
counts (``cluster_*.npy``) and their sizes in ``model.json``. Held-out and new documents: the model's own sampler
with the topics and the training clusters frozen (:mod:`inference.gibbs.heldout`); left-to-right:
:mod:`drivers.models.cluster_lda.left_to_right`.
"""
