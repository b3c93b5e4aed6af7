"""``lda``: latent Dirichlet allocation on a bag-of-words corpus (thesis ch. 3), optionally with an informed
prior (§3.3.1: seed word lists or a sparse prior, :mod:`drivers.models.lda.informed_prior`)."""
from __future__ import annotations

from drivers import storage
from drivers.corpora.aligned import is_aligned
from drivers.corpora.bow import Corpus, load_corpus
from drivers.corpora.files import CORPUS_JSON
from drivers.families import TrainRequest
from drivers.families.variational.family import TopicWordPrior, VariationalModel
from drivers.store import model_store
from drivers.models.lda.informed_prior import PriorError, build_prior, read_prior, spec_from_json, spec_to_json
from inference.constraints import POSITIVE
from inference.errors import UsageError
from inference.options import ModelOption
from inference.priors import SymmetricPrior


class LDA(VariationalModel):
    name = "lda"
    options = (
        ModelOption("eta", "symmetric topic-word prior (default 1/K)", constraint=POSITIVE),
        ModelOption("optimize_eta", "learn a symmetric eta by Newton-Raphson", bool),
        ModelOption("prior", "informed prior: seed word lists per named topic (JSON, 'name: word prefix*' lines, "
                             "or a LIWC .dic) or a sparse prior (Parquet/CSV with topic, word, value); see "
                             "drivers/models/lda/informed_prior.py", str, metavar="FILE", path=True),
        ModelOption("prior_high", "eta of a seeded topic for its seed words (default 10, as the thesis)",
                    default=10.0, constraint=POSITIVE),
        ModelOption("prior_low", "eta of a seeded topic for every other word (default 0.01, as the thesis)",
                    default=0.01, constraint=POSITIVE),
    )

    def open_corpus(self, spark, request: TrainRequest) -> Corpus:
        if is_aligned(request.corpus):
            langs = storage.load_json(storage.join(request.corpus, CORPUS_JSON))["languages"]
            raise UsageError(f"{request.corpus} is an aligned corpus ({', '.join(langs)}): train --model polylda on "
                             f"it, or --model lda on one language's sub-corpus, e.g. "
                             f"{storage.join(request.corpus, langs[0])}")
        return load_corpus(spark, request.corpus, request.partitions)

    def topic_word_prior(self, request: TrainRequest, corpus: Corpus) -> TopicWordPrior:
        eta = request.option("eta") or 1.0 / request.topics
        path = request.option("prior")
        if not path:
            return TopicWordPrior(SymmetricPrior(eta, corpus.vocab_size))
        if request.option("optimize_eta"):
            raise UsageError("--optimize-eta cannot be combined with --prior (the informed prior is fixed)")
        high, low = request.option("prior_high", 10.0), request.option("prior_low", 0.01)
        try:
            spec = read_prior(path)
            prior, names, report = build_prior(spec, corpus.vocab, request.topics, eta, high, low)
        except PriorError as exc:
            raise UsageError(f"--prior {path}: {exc}") from None
        report["file"] = path
        return TopicWordPrior(prior, names, report, [path, high, low], spec_to_json(spec, high, low))

    def refreshed_prior(self, base, vocab, eta: float):
        """The informed prior re-applied (prior_spec.json: its word lists and patterns, or its sparse entries,
        matched against the grown vocabulary, so a new word a seeded topic's pattern matches gets --prior-high and
        every other new word --prior-low there); None for a model trained without one."""
        spec_path = storage.join(base.directory, model_store.PRIOR_SPEC)
        if not storage.exists(spec_path):
            return None
        spec, high, low = spec_from_json(storage.load_json(spec_path))
        prior, names, _ = build_prior(spec, vocab, base.num_topics, eta, high, low)
        return prior, names
