"""What a variational ``train`` and a ``refresh`` share: the training settings, the check that a task's Python
memory fits the model, and the writer of the per-document topic proportions."""
from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from drivers import storage
from drivers.corpora.bow import Corpus, materialise_blocks
from drivers.engines.memory import python_memory_check, variational_task_bytes
from drivers.engines.variational.checkpoint import Checkpointer
from drivers.store import outputs
from inference.constraints import (AT_LEAST_0, AT_LEAST_1, NON_NEGATIVE, Constrained, Integral, Interval,
                                   StrOptions)
from partitioners.topic import TopicPartitioner

log = logging.getLogger("spark_topics.train")


@dataclass(frozen=True)
class VariationalTraining(Constrained):
    """The family's training settings (``train`` flags), checked against their declared constraints when made."""
    tol: float = 1e-5                 # stop when |relative ELBO change| < tol (0: run every iteration)
    estep_tol: float = 1e-3
    estep_max_iter: int = 100
    estep_schedule: str = "auto"
    restarts: str = "auto"
    inference: str = "variational"    # variational (the E-step) | hybrid (a sampling E-step, thesis §4.2)
    hybrid_burn_in: int = 5
    hybrid_samples: int = 5
    hybrid_weights: str = "mean"      # the word factor of (4.9): E_q[beta] (mean) or exp(E_q[log beta]) (digamma)
    hybrid_alpha_warmup: int = 10     # EM iterations of alpha from Psi(mean counts), then the samples' mean of Psi

    parameter_constraints = {
        "tol": NON_NEGATIVE, "estep_tol": NON_NEGATIVE, "estep_max_iter": AT_LEAST_1,
        "estep_schedule": StrOptions(("auto", "fixed")), "restarts": StrOptions(("auto", "always", "never")),
        "inference": StrOptions(("variational", "hybrid")), "hybrid_burn_in": AT_LEAST_0,
        "hybrid_samples": AT_LEAST_1, "hybrid_weights": StrOptions(("mean", "digamma")),
        "hybrid_alpha_warmup": Interval(Integral, -1, None, closed="left")}


def check_python_memory(sc, corpus: Corpus, num_topics: int, reducers: int | None) -> None:
    """Size the tasks' Python memory from the model (the largest partition vocabulary x K, K/R x V) and refuse
    a run that cannot fit before the first iteration (:func:`drivers.engines.memory.python_memory_check`)."""
    local_vocab = corpus.largest_block_vocab      # counted as the corpus was loaded
    if local_vocab is None:
        sc.setJobDescription("train: the largest partition vocabulary (Python memory of a task)")
        local_vocab = materialise_blocks(corpus.blocks)
        sc.setJobDescription(None)
    num_reducers = TopicPartitioner.for_topics(num_topics, reducers, sc.defaultParallelism).num_reducers
    task = variational_task_bytes(num_topics, corpus.vocab_size, int(local_vocab), num_reducers)
    log.info(python_memory_check(task, sc.master, dict(sc.getConf().getAll()), sc.defaultParallelism))


def doc_topics_writer(path: str, topic_names: list | None = None):
    """``(partition, block, gamma) -> None``: a partition's part of ``path`` as :func:`write_doc_topics` writes it,
    for the mappers of the last EM iteration (:meth:`VariationalEngine.fit`'s ``final_outputs``) of a local step
    whose state is gamma."""
    names = list(topic_names) if topic_names else None

    def write(partition, block, gamma):
        storage.write_parquet(storage.join(path, f"part-{partition:05d}.parquet"),
                              outputs.doc_topics_table(block.doc_ids, gamma, names))
    return write


def write_doc_topics(spark, blocks, gamma_dir: str, path: str, topic_names: list | None = None, local_step=None,
                     alpha=None) -> int:
    """doc_id, gamma, theta for every training document, from the last local step's state files (the E-step's
    gamma; for another local step the gamma it derives from its state and ``alpha``).

    With named topics (an informed prior) also ``top_topic`` (the name of the
    largest proportion) and ``theta_named`` (topic name -> proportion). Each task
    writes its partition as one Parquet file of the ``path`` directory; returns
    the number of rows written.
    """
    names = list(topic_names) if topic_names else None

    def tables(partition, block):
        state = storage.load_npy(Checkpointer.gamma_file(gamma_dir, partition))
        gamma = state if local_step is None else local_step.gamma(block, state, np.asarray(alpha))
        return [outputs.doc_topics_table(block.doc_ids, gamma, names)]

    return outputs.write_partition_tables(spark, blocks, [path], tables,
                                          "write per-document topic proportions")[0]
