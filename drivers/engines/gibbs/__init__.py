"""The Gibbs engine on Spark: per-partition samplers (AD-LDA) -> TopicPartitioner -> reducers -> driver.

Any :class:`inference.gibbs.model.GibbsModel` runs on it; per synchronisation it performs exactly the steps
of :func:`inference.gibbs.local.run_local`, with one partition per block:

1. the driver sends the model's count tables (:mod:`inference.gibbs.tables`: LDA's one table ``nwk``, V x K
   int32; any set of named dense or keyed tables), the values the model derives from them (``nk``), the
   hyperparameters and the directive of the model's global step (a Spark broadcast with a job per
   synchronisation, or a message to each resident task: :mod:`.resident`);
2. every partition (:mod:`.tasks`; its block staged once, to a file and the Python worker's memory, so an
   iteration ships no corpus data) takes its state of the previous iteration (kept by the Python worker that
   wrote it, else read from its files: :mod:`.state`), applies the directive, runs ``model.sweep_tables`` on
   private copies of the tables (AD-LDA, Newman et al. 2009), then ``local_hyper_update`` and
   ``partition_stats``, seeded by ``task_seed(seed, iteration, partition, purpose)``, writes the new state to
   files of this iteration, and emits its nonzero counts per table and column group (:mod:`.tables`) and its
   statistics under the reserved key;
3. ``partitionBy(R, TopicPartitioner)`` (the partitioner of the variational jobs) routes them to R reducers
   that sum them (a dense table into ``rows x |group|`` int32 columns, a keyed one into its nonzero rows); the
   partition records pass through reducer 0. While the counts of all partitions fit in a task result
   (:data:`.engine.DRIVER_SUM_BYTES`), the driver sums them instead (the same reduce function, exact
   integers): one stage per synchronisation, which saves Spark's shuffle stage (~0.1-0.2 s) every iteration;
4. the driver (:mod:`.engine`) rebuilds the tables (exact integer sums, independent of partition order), sums
   ``partition_stats`` in partition order, calls ``model.update_hyper`` and ``model.global_step`` (default:
   none; its directive goes with the next synchronisation), derives, logs a line and, on sample iterations,
   adds the topic-word point estimate to the running average.

With ``sweeps_per_sync`` = m > 1 every partition runs m sweeps (iterations t+1..t+m, each seeded by its own
iteration number) on its private counts before the next synchronisation, which amortises the per-job cost of
Spark; hyperparameters are then updated once per synchronisation.

Samples: after ``burn_in`` iterations, every ``lag``-th iteration is a sample (``samples`` of them, thesis
§11.1); the topic-word matrix and each partition's document and segment topic proportions are averaged over
them (the tasks add a sample's proportions to the sums of the previous one and write them to files of the
sample's iteration).

State and checkpoints: every task writes its partition's state after each iteration under a name of that
iteration (``.npz``, no pickle), so a retried task never reads what it wrote and reproduces its result; no RDD
lineage grows and no broadcast outlives its job. Every ``checkpoint_every`` iterations and at the end the
driver writes the tables, the topic-word sum, the pending directive and ``state.json`` (last, atomically;
:mod:`.checkpoint`); the state files of the last two checkpoints stay, other iterations' go once no task needs
them. ``resume`` continues from the last checkpoint and ends with the model an uninterrupted run gives. Every
draw is a function of (seed, iteration, partition) and every sum runs in a fixed order, so a seed gives the
same model on any master, either transport and after task retries.

Modules: ``settings`` (schedule, settings, plan, results), ``tables`` (records, reducers, messages of the
tables), ``tasks`` (a partition's synchronisation), ``resident`` (the barrier stage and its messages),
``sync_hub`` (the hub on the driver), ``state`` (per-partition files), ``checkpoint`` (the driver's files),
``engine`` (the loop).
"""
