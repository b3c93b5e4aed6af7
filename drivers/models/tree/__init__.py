"""``tlda`` and ``ptlda``: LDA over a prior tree (thesis ch. 5) on both engines: the registry's classes
(``model``), the Gibbs sampler (``gibbs``), the tree as a topic-word layout (``layout``), prior trees from
bilingual dictionaries (``prior_tree``, ``dictionaries``)."""
