"""The variational engine's Spark tasks: a mapper over one partition (the local step, its state files, the
combined statistics) and a reducer over its topics (the update rule, the topic files, the ELBO terms)."""
from __future__ import annotations

import numpy as np

from drivers import storage
from drivers.engines.variational.checkpoint import Checkpointer
from drivers.engines.variational.topic_store import TopicFiles
from inference.reducer import reduce_topics, sum_in_partition_order
from partitioners.topic import STATISTICS_KEY


def collect_checked(job, when: str) -> list:
    """``job.collect()``; a task that raised ``FloatingPointError`` (a non-finite value, named where it appeared:
    :func:`inference.word_weights.check_finite`) fails the run at once with ``when`` and the task's message."""
    try:
        return job.collect()
    except FloatingPointError as exc:
        raise FloatingPointError(f"{when}: {exc}") from None
    except Exception as exc:
        raised = [line.strip() for line in str(exc).splitlines() if line.strip().startswith("FloatingPointError: ")]
        if raised:
            raise FloatingPointError(f"{when}: {raised[-1].removeprefix('FloatingPointError: ')}") from None
        raise


def mapper_task(partition, blocks, local_step, plan, bc_alpha, topics_in: TopicFiles, state_in, state_out,
                 topic_groups, final_outputs=None):
    """Spark task: the local step over one partition (Alg. 1 with in-mapper combining); ``final_outputs(partition,
    block, new state)``, when given, writes the partition's outputs of the run's last iteration."""
    alpha = bc_alpha.value
    for block_partition, block in blocks:
        if block_partition != partition:
            raise RuntimeError(f"block of partition {block_partition} arrived in partition {partition}")
        state = storage.load_npy(Checkpointer.gamma_file(state_in, partition)) if state_in else None
        new_state, records, statistics = local_step.run(partition, block, state,
                                                        topics_in.log_word_weights(block.vocab_ids), alpha, plan,
                                                        topic_groups)
        storage.save_npy(Checkpointer.gamma_file(state_out, partition), new_state)
        if final_outputs is not None:
            final_outputs(partition, block, new_state)
        for first_topic, record in records:
            yield (first_topic, partition), record
        yield (STATISTICS_KEY, partition), (partition, statistics)


def reducer_task(reducer, records, bc_structure, update, num_statistics, topics_in: TopicFiles,
                  topics_out: TopicFiles, mean_weights=False):
    """Spark task: reducer ``reducer`` (Alg. 3): lambda and the mappers' weights of the topics the
    TopicPartitioner routes here, written to the iteration's topic files; the driver gets each topic's
    :class:`TopicTerms` and (reducer 0) the partitions' statistics vectors summed in partition order."""
    prior, layout = bc_structure.value
    statistics = []

    def topic_records():   # the shuffle sorted by (first topic, partition): the statistics vectors come first
        for (first_topic, _), value in records:
            if first_topic == STATISTICS_KEY:
                statistics.append(value)
            else:
                yield value

    topics = topics_out.topic_groups[reducer]
    previous = topics_in.lambda_row_reader() if update.needs_previous or layout.needs_previous else None
    lambda_rows, weight_columns = None, None
    for i, u in enumerate(reduce_topics(topics, topic_records(), prior.row, layout, update, previous,
                                        mean_weights)):
        if i == 0 and statistics:
            yield STATISTICS_KEY, sum_in_partition_order(statistics, num_statistics)
        if lambda_rows is None:
            lambda_rows = np.empty((len(topics), u.lambda_row.shape[0]))
            weight_columns = np.empty((u.log_weight_row.shape[0], len(topics)))
        lambda_rows[i], weight_columns[:, i] = u.lambda_row, u.log_weight_row
        yield u.terms()
    topics_out.write(reducer, lambda_rows, weight_columns)
