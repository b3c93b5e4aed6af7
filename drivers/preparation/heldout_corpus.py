"""``prepare --holdout-fraction F`` of a monolingual corpus: the documents whose id hashes below F
(:mod:`drivers.preparation.holdout`) go to ``CORPUS_DIR/heldout``, a corpus of its own prepared with the training
part's vocabulary (for ``evaluate`` and ``select-k``), the others to ``CORPUS_DIR``."""
from __future__ import annotations

from drivers import storage
from drivers.corpora.files import VOCAB
from drivers.preparation.corpus import prepare_corpus
from drivers.preparation.holdout import HELDOUT, HELDOUT_DIR, TRAIN
from drivers.preparation.options import PrepareError


def prepare_with_holdout(spark, input_path: str, output_dir: str, fraction: float, engine: str = "auto",
                         **options) -> dict:
    """The training corpus in ``output_dir`` and the held-out one in ``output_dir/heldout`` (its vocabulary: the
    training corpus'); returns the training corpus.json with ``heldout`` (the held-out summary) added."""
    if not 0.0 <= fraction < 1.0:
        raise PrepareError(f"--holdout-fraction must be in [0, 1), got {fraction}")
    if options.get("vocab"):
        raise PrepareError("--holdout-fraction builds the vocabulary from the training part; it does not go with "
                           "--vocab")
    corpus = prepare_corpus(spark, input_path, output_dir, engine, **dict(options, holdout=(fraction, TRAIN)))
    heldout = prepare_corpus(spark, input_path, storage.join(output_dir, HELDOUT_DIR), engine,
                             **dict(options, holdout=(fraction, HELDOUT), overwrite=True,
                                    vocab=storage.join(output_dir, VOCAB)))
    return dict(corpus, heldout=heldout)
