"""``tlda`` and ``ptlda``: LDA with a prior tree over the vocabulary (thesis ch. 5; Boyd-Graber et al. 2007,
Hu et al. 2014), the tree built from bilingual dictionaries by ``spark-topics tree``
(:mod:`drivers.models.tree.prior_tree`).

Each topic is a distribution over the tree's paths (:class:`inference.tree_layout.TreeLayout`): words linked by a
concept share probability through the concept's edge, so a topic that likes a word likes its translation.

* ``tlda``: on a monolingual corpus, or on an aligned corpus whose documents are not aligned: every language's
  documents are separate (``<id>@<lang>``), coupled only through the tree;
* ``ptlda``: on an aligned corpus: one theta per tuple and one distribution over the paths of every language per
  topic (thesis §5.1.3).

Edge priors (so that a tree without concepts is flat LDA with the run's eta, bit for bit): root -> word eta;
root -> concept eta times the sum over its words of 1/(number of concepts of the word); concept -> word
``--link-strength`` times eta over the word's number of concepts. Without ``--tree`` the tree has no concepts.
"""
from __future__ import annotations

import logging

import numpy as np

from drivers import storage
from drivers.corpora.aligned import is_aligned, load_aligned_corpus
from drivers.corpora.bow import Corpus, load_corpus
from drivers.families import TrainRequest
from drivers.families.variational.family import TopicWordPrior, VariationalModel
from drivers.models.tree.gibbs import TreeGibbs
from inference.tree_layout import TreeLayout
from drivers.models.tree.prior_tree import concept_word_ids, load_tree
from drivers.store import model_store, topic_model
from inference.constraints import POSITIVE
from inference.errors import UsageError
from inference.options import ModelOption
from inference.priors import EdgePrior

log = logging.getLogger("spark_topics.train")


class TreeLDA(VariationalModel):
    name = "tlda"
    options = (
        ModelOption("tree", "the prior tree (spark-topics tree --output DIR); without it the tree has no "
                            "concepts and the model is LDA", str, metavar="TREE_DIR", path=True),
        ModelOption("link_strength", "prior of a concept's edges to its words, in units of eta over the word's "
                                     "number of concepts (default 100)", default=100.0, constraint=POSITIVE),
        ModelOption("eta", "prior of a root -> word edge (default 1/K); the other edges follow from it",
                    constraint=POSITIVE),
    )
    #: one document per tuple (ptlda) or per tuple and language (tlda on an aligned corpus)
    aligned_documents = False

    def open_corpus(self, spark, request: TrainRequest) -> Corpus:
        if is_aligned(request.corpus):
            return load_aligned_corpus(spark, request.corpus, request.partitions,
                                       separate=not self.aligned_documents)
        if self.aligned_documents:
            raise UsageError(f"--model {self.name} needs an aligned corpus (prepare --lang-column); "
                             f"{request.corpus} is monolingual: use --model tlda")
        return load_corpus(spark, request.corpus, request.partitions)

    def structure(self, request: TrainRequest, corpus: Corpus) -> TreeLayout:
        return tree_of(request, corpus, self.name)

    def topic_word_prior(self, request: TrainRequest, corpus: Corpus) -> TopicWordPrior:
        eta = request.option("eta") or 1.0 / request.topics
        link = request.option("link_strength", 100.0)
        tree = self.structure(request, corpus)
        version = None
        if request.option("tree"):
            version = storage.load_json(storage.join(request.option("tree"), "tree.json"))["report"]
        return TopicWordPrior(EdgePrior(tree.edge_priors(eta, link), eta, link),
                              fingerprint=[request.option("tree"), link, version])

    def describe(self, request: TrainRequest, corpus: Corpus, structure: TreeLayout) -> dict:
        paths = structure.paths_of_words()
        return {"tree": {"directory": request.option("tree"), "concepts": structure.num_concepts,
                         "link_strength": request.option("link_strength", 100.0),
                         "edges": structure.parameter_size, "words_with_several_paths": int(np.sum(paths > 1)),
                         "max_paths": int(paths.max(initial=1))},
                "documents_per": "tuple" if self.aligned_documents or corpus.layout is None else "tuple and language"}

    def save(self, directory: str, meta: dict, corpus: Corpus, lambda_: np.ndarray, structure: TreeLayout) -> None:
        model_store.save_tree_model(directory, meta, corpus.vocab, lambda_, structure)

    def refresh_start(self, spark, base, corpus: Corpus):
        """A refresh's start: the tree grown with the vocabulary (its dictionaries read again), the edge priors of
        the model's eta and link strength over it, lambda carried over path by path
        (:mod:`drivers.models.tree.growth`)."""
        from drivers.families.variational.refresh import GrownStart
        from drivers.models.tree.growth import carry_statistics, grown_tree
        from drivers.corpora.aligned import word_columns

        eta, link = float(base.meta["eta"]), float(base.meta["tree"].get("link_strength", 100.0))
        tree, grown = grown_tree(spark, base.layout, base.vocab, base.meta["tree"].get("directory"), corpus)
        beta = tree.edge_priors(eta, link)
        lambda_ = carry_statistics(base.layout, base.lambda_, base.layout.edge_priors(eta, link), tree, beta,
                                   word_columns(base.vocab, corpus.vocab))
        paths = tree.paths_of_words()
        described = dict(base.meta["tree"], concepts=tree.num_concepts, edges=tree.parameter_size,
                         words_with_several_paths=int(np.sum(paths > 1)), max_paths=int(paths.max(initial=1)),
                         refresh=grown)
        return GrownStart(tree, EdgePrior(beta, eta, link), lambda_, describe={"tree": described})


class PolylingualTreeLDA(TreeLDA):
    name = "ptlda"
    aligned_documents = True


def tree_of(request: TrainRequest, corpus: Corpus, name: str) -> TreeLayout:
    """The prior tree of ``--tree`` over the corpus' vocabulary (no concepts without it)."""
    languages = tuple(corpus.layout.languages) if corpus.layout is not None else ("",)
    offsets = tuple(corpus.layout.offsets) if corpus.layout is not None else (0, corpus.vocab_size)
    path = request.option("tree")
    if not path:
        log.warning("--model %s without --tree: a tree without concepts, i.e. LDA", name)
        return TreeLayout(corpus.vocab_size, np.zeros((0, 2), dtype=np.int64), languages, offsets)
    concepts, meta = load_tree(path)
    if tuple(meta["languages"]) != languages:
        raise UsageError(f"--tree {path} was built for the languages {', '.join(meta['languages']) or '(one)'}, "
                         f"the corpus has {', '.join(languages) or '(one)'}: build the tree with "
                         f"spark-topics tree --corpus {request.corpus}")
    if "lang" in corpus.vocab.columns:
        vocabulary = dict(zip(zip(corpus.vocab["lang"], corpus.vocab["term"]), corpus.vocab["id"].astype(int)))
    else:
        vocabulary = dict(zip(zip([""] * len(corpus.vocab), corpus.vocab["term"]), corpus.vocab["id"].astype(int)))
    return TreeLayout(corpus.vocab_size, concept_word_ids(concepts, vocabulary), languages, offsets)


class TreeLDAGibbs(TreeGibbs):
    """``tlda --inference gibbs``: tree LDA by collapsed Gibbs sampling (eq 5.2) on the Gibbs engine, on a
    monolingual corpus or on an aligned one whose languages' documents are separate (``<id>@<lang>``)."""
    options = TreeGibbs.options + TreeLDA.options[:2]      # beta (eta), tree, link_strength
    construction_options = ("link_strength",)
    #: an aligned corpus: one document per tuple and language (drivers.corpora.segmented)
    aligned_documents_per = "language"
    #: the chain's words move to their columns in the batch's vocabulary (chain_growth.GrownChain)
    continuation_moves_words = True

    def __init__(self, num_topics: int, vocab_size: int, link_strength: float | None = None):
        super().__init__(num_topics, vocab_size, 100.0 if link_strength is None else link_strength)
        self.tree_directory = None
        self.tree_growth = None

    @classmethod
    def chain_refusal(cls, construction: dict) -> str | None:
        """Its chain continues: the tree grows with the vocabulary (:meth:`continued_chain`)."""
        return None

    def continued_chain(self, spark, old_model, base, batch, seed: int, iteration: int):
        """The tree grown over the batch's vocabulary as the variational refresh grows it
        (:func:`drivers.models.tree.growth.grown_tree`), the old partitions' words and paths moved onto it
        (:class:`drivers.models.tree.chain_growth.GrownChain`); without a batch the kept tree."""
        from drivers.corpora.aligned import word_columns
        from drivers.models.tree.chain_growth import GrownChain
        from drivers.models.tree.growth import grown_tree

        self.tree_directory = (base.meta.get("prior_tree") or {}).get("directory")
        if batch is None:
            self.set_tree(old_model.tree)
            return None
        tree, self.tree_growth = grown_tree(spark, old_model.tree, base.vocab, self.tree_directory, batch)
        self.set_tree(tree)
        return GrownChain(old_model.tree, tree, word_columns(base.vocab, batch.vocab), seed, iteration)

    def initial_hyper(self, tree=None, link_strength=None, **hyper) -> dict:
        """LDA-Gibbs' hyperparameters (``beta`` is eta); the tree options are the model's, not hyperparameters."""
        return super().initial_hyper(**hyper)

    def bind_corpus(self, corpus, request: TrainRequest) -> None:
        """The tree over the training corpus' vocabulary."""
        self.tree_directory = request.option("tree")
        self.set_tree(tree_of(request, corpus, self.name))

    def save_files(self, directory: str, result) -> None:
        """The tree (``tree_concepts.npy``) and its edge parameters after the last iteration
        (``tree_edge_counts.npy``: K x E counts of the tokens' (topic, edge); with the edge priors of ``--beta`` and
        ``--link-strength`` they give the Dirichlet posterior of every node's children)."""
        storage.save_npy(storage.join(directory, topic_model.TREE_CONCEPTS), self.tree.concept_words)
        storage.save_npy(storage.join(directory, topic_model.TREE_EDGE_COUNTS),
                         np.ascontiguousarray(np.asarray(result.tables["nwk"]).T, dtype=np.int64))

    def bind_directory(self, directory: str) -> None:
        self.set_tree(TreeLayout(self.vocab_size, storage.load_npy(storage.join(directory,
                                                                                topic_model.TREE_CONCEPTS))))

    def describe(self) -> dict:
        paths = self.tree.paths_of_words()
        return {"link_strength": self.link_strength,
                "prior_tree": {"directory": self.tree_directory, "concepts": self.tree.num_concepts,
                               "link_strength": self.link_strength, "edges": self.tree.parameter_size,
                               "words_with_several_paths": int(np.sum(paths > 1)),
                               "max_paths": int(paths.max(initial=1)),
                               **({} if self.tree_growth is None else {"refresh": self.tree_growth})}}


class PolylingualTreeLDAGibbs(TreeLDAGibbs):
    """``ptlda --inference gibbs``: one document per aligned tuple (its languages' tokens share theta), topics over
    the paths of a tree spanning the languages (thesis §5.1.3), sampled by eq 5.2."""
    name = "ptlda"
    aligned_documents_per = "tuple"

    def bind_corpus(self, corpus, request: TrainRequest) -> None:
        if corpus.layout is None:
            raise UsageError(f"--model ptlda needs an aligned corpus (prepare --lang-column); {request.corpus} is "
                             f"monolingual: use --model tlda")
        super().bind_corpus(corpus, request)
