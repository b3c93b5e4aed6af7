"""``polylda``: polylingual LDA (Mimno et al. 2009; thesis §3.3.2) on an aligned corpus: one topic
distribution per tuple, one topic-word Dirichlet per (topic, language) (:class:`inference.layout.VocabLayout`)."""
from __future__ import annotations

import numpy as np

from drivers.corpora.aligned import is_aligned, load_aligned_corpus
from drivers.corpora.bow import Corpus
from drivers.families import TrainRequest
from drivers.families.variational.family import TopicWordPrior, VariationalModel
from inference.constraints import POSITIVE
from inference.errors import UsageError
from inference.options import ModelOption
from inference.priors import DirichletPrior


class PolyLDA(VariationalModel):
    name = "polylda"
    options = (
        ModelOption("eta", "topic-word prior of every language (default 1/K)", constraint=POSITIVE),
        ModelOption("languages", "comma-separated languages of the aligned corpus to use (default: all)", str),
        ModelOption("eta_per_language", "topic-word prior per language (default: --eta for every language)",
                    str, metavar="L=ETA,..."),
    )

    def open_corpus(self, spark, request: TrainRequest) -> Corpus:
        if not is_aligned(request.corpus):
            raise UsageError(f"--model polylda needs an aligned corpus (prepare --lang-column); "
                             f"{request.corpus} is monolingual")
        languages = request.option("languages")
        languages = [l.strip() for l in languages.split(",")] if languages else None
        return load_aligned_corpus(spark, request.corpus, request.partitions, languages)

    def topic_word_prior(self, request: TrainRequest, corpus: Corpus) -> TopicWordPrior:
        eta = request.option("eta") or 1.0 / request.topics
        etas = dict.fromkeys(corpus.layout.languages, eta)
        for item in filter(None, (request.option("eta_per_language") or "").split(",")):
            lang, _, value = item.partition("=")
            if lang.strip() not in etas:
                raise UsageError(f"--eta-per-language: {lang.strip()!r} is not a language of the corpus "
                                 f"({', '.join(etas)})")
            try:
                etas[lang.strip()] = float(value)
            except ValueError:
                raise UsageError(f"--eta-per-language: {item!r} is not LANG=NUMBER") from None
            if not np.isfinite(etas[lang.strip()]) or etas[lang.strip()] <= 0:
                raise UsageError(f"--eta-per-language: {item!r}: eta must be positive")
        return TopicWordPrior(DirichletPrior.per_language([etas[l] for l in corpus.layout.languages], corpus.layout))

    def refresh_start(self, spark, base, corpus: Corpus):
        """A refresh's start: each language's Dirichlet over its grown vocabulary with the model's eta for that
        language (model.json), each old word's lambda where (language, word) puts it now, new words at eta."""
        from drivers.families.variational.refresh import GrownStart, carried_over

        eta = base.meta.get("eta")
        etas = [float(eta[l]) if isinstance(eta, dict) else float(eta) for l in corpus.layout.languages]
        prior = DirichletPrior.per_language(etas, corpus.layout)
        return GrownStart(corpus.layout, prior, carried_over(base, corpus.vocab, prior))
