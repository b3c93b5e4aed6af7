"""Resident mode: every partition's sampler is a task of one barrier stage that lives for the whole run and
trades one message pair per synchronisation with a hub on the driver (:mod:`drivers.engines.gibbs.sync_hub`:
a JSON header and raw numpy arrays, nothing pickled).

The driver's message: the plan, the hyperparameters, the model's tables (a dense table whole the first time,
then the entries that changed; a keyed table as its nonzero rows), the derived values and the directive of the
global step; a task's reply: its records, exactly those a Spark job's task emits
(:func:`drivers.engines.gibbs.tasks.partition_sync`), so both transports give the same model bit for bit.
"""
from __future__ import annotations

import os
import threading
from functools import partial

import numpy as np

from drivers.engines.gibbs.settings import SyncPlan
from drivers.engines.gibbs.sync_hub import SyncHub, connect, recv_message, send_message
from drivers.engines.gibbs.tables import (TableLayout, apply_tables_message, directive_message, directive_of,
                                          tables_message)
from drivers.engines.gibbs.tasks import only_one, partition_sync
from partitioners.topic import STATISTICS_KEY

#: a test's hook: ``(iteration, marker file)`` makes partition 1's resident task die (``os._exit``) before that
#: iteration, once (the marker records that it did), to show that the run goes on with one job per synchronisation
RESIDENT_TEST_KILL = None


# --------------------------------------------------------------------------- messages

def plan_message(plan: SyncPlan, layout: TableLayout, tables: dict, derived: dict, hyper: dict,
                 directive: dict | None, previous: dict | None = None) -> tuple[dict, list]:
    """A synchronisation's message: the plan, hyperparameters, tables (dense ones as changes from
    ``previous``, the tables the tasks hold, when given), derived values and directive."""
    table_header, arrays = tables_message(layout, tables, derived, previous)
    directive_header, directive_arrays = directive_message(directive)
    header = {"kind": "sync", "iterations": list(plan.iterations), "sample": plan.sample,
              "previous_sample": plan.previous_sample, "hyper": hyper, "directive": directive_header,
              **table_header}
    return header, arrays + directive_arrays


def records_message(records) -> tuple[dict, list]:
    """A partition's records as one message: the statistics record's scalars in the header, its statistics
    vector and every (table, column group)'s flat indices and counts as arrays."""
    groups, arrays, stats_record = [], [], None
    for key, value in records:
        if key == STATISTICS_KEY:
            stats_record = value
        else:
            groups.append([int(k) for k in key])
            arrays += [value[1], value[2]]
    partition, stats, n_docs, n_tokens, sweep_seconds, wall = stats_record
    header = {"partition": int(partition), "documents": int(n_docs), "tokens": int(n_tokens),
              "sweep_seconds": float(sweep_seconds), "wall": [float(w) for w in wall], "groups": groups}
    return header, [np.asarray(stats, dtype=np.float64)] + arrays


def message_records(header: dict, arrays: list) -> list:
    """The records of :func:`records_message` again, as the reducers' function takes them."""
    p = header["partition"]
    records = [(tuple(key), (p, arrays[1 + 2 * i], arrays[2 + 2 * i])) for i, key in enumerate(header["groups"])]
    records.append((STATISTICS_KEY, (p, arrays[0], header["documents"], header["tokens"], header["sweep_seconds"],
                                     header["wall"])))
    return records


# --------------------------------------------------------------------------- the tasks

def _resident_task(items, model, run, directory, seed, layout, address, token, kill=None):
    """Spark barrier task: a partition's sampler for the whole run; per message of the driver's hub a
    synchronisation exactly as a Spark job's task does it, answered by the partition's records."""
    from pyspark import BarrierTaskContext

    partition = BarrierTaskContext.get().partitionId()
    only_one(partition, items)
    _serve_resident([partition], model, run, directory, seed, layout, address, token, kill)
    yield partition


def _resident_group_task(items, model, run, directory, seed, layout, address, token, kill=None):
    """Spark barrier task hosting several partitions (more partitions than task slots): its one record is the
    list of its partitions, each with its own connection to the hub, swept one after the other per
    synchronisation, each exactly as a task of its own would (the same model: only the wall clock changes)."""
    records = list(items)
    if len(records) != 1:
        raise RuntimeError(f"a resident group task expects its one list of partitions, got {records}")
    _serve_resident(list(records[0]), model, run, directory, seed, layout, address, token, kill)
    yield from records[0]


def _serve_resident(partitions, model, run, directory, seed, layout, address, token, kill=None):
    """The synchronisations of ``partitions`` (one connection each) until the hub says stop: every message is
    read before any partition sweeps (the driver sends all partitions their message before it reads a reply)."""
    socks = [connect(tuple(address), token, partition) for partition in partitions]
    held = [None] * len(partitions)   # each partition's copy of the tables of the last synchronisation
    try:
        while True:
            messages = [recv_message(sock) for sock in socks]
            if any(header["kind"] != "sync" for header, _ in messages):
                break
            for j, (partition, sock, (header, arrays)) in enumerate(zip(partitions, socks, messages)):
                plan = SyncPlan(tuple(header["iterations"]), header["sample"], header["previous_sample"])
                if kill is not None and partition == 1 and plan.iterations and plan.iterations[0] == kill[0] \
                        and not os.path.exists(kill[1]):
                    open(kill[1], "w").close()
                    os._exit(1)
                tables, derived, rest = apply_tables_message(layout, header, arrays, held[j])
                held[j] = tables
                values = (tables, derived, header["hyper"], directive_of(header["directive"], rest))
                records = partition_sync(partition, model, run, directory, values, seed, plan, layout)
                send_message(sock, *records_message(records))
    finally:
        for sock in socks:
            sock.close()


def resident_groups(num_partitions: int, slots: int) -> list[list[int]]:
    """The partitions each task of a resident stage hosts: one each while they fit the slots, else dealt round
    robin over ``slots`` tasks (partition p to task p mod slots)."""
    tasks = max(1, min(num_partitions, slots))
    return [list(range(t, num_partitions, tasks)) for t in range(tasks)]


def resident_slots(sc) -> int:
    """How many tasks the cluster runs at once (what a barrier stage needs for all its tasks), 0 when unknown
    or when Spark may add and remove executors (dynamic allocation: no barrier stage)."""
    conf = sc.getConf()
    if conf.get("spark.dynamicAllocation.enabled", "false").lower() == "true":
        return 0
    try:
        jsc = sc._jsc.sc()
        return int(jsc.maxNumConcurrentTasks(jsc.resourceProfileManager().defaultResourceProfile()))
    except Exception:       # noqa: BLE001  (an internal API of Spark's: without it, no resident mode)
        return 0


# --------------------------------------------------------------------------- the driver's side

class ResidentSampler:
    """The partitions' samplers as one barrier stage that lives for the whole run (a Spark job in a thread of
    the driver) and a :class:`drivers.engines.gibbs.sync_hub.SyncHub` that trades one message pair per
    partition and synchronisation with its tasks: the driver's loop is unchanged, a synchronisation costs its
    sweeps and two messages instead of a Spark job."""

    def __init__(self, engine, handles, layout: TableLayout, description: str, hosted=None):
        """``hosted``: the partitions of each task (:func:`resident_groups`) when tasks host several; None:
        one task per partition, scheduled where its staged handle is cached."""
        sc = engine.sc
        conf = sc.getConf()
        if sc.master.startswith("local"):
            host = bind = "127.0.0.1"
        else:                       # executors reach spark.driver.host; the driver listens where Spark does
            host = conf.get("spark.driver.host")
            bind = conf.get("spark.driver.bindAddress", host)
        self.failure = None         # what ended the barrier stage early, if Spark said
        self.sent = None            # the plan the tasks are working on
        self.layout = layout
        self._held = None           # the dense tables the tasks hold (the last ones sent)
        self._thread = None
        # a reply: a partition's nonzero cells (flat index and count, <= 16 bytes each) and its statistics
        max_reply = 16 * layout.reply_cells(engine.num_tokens) + (64 << 20)
        self.hub = SyncHub(bind, engine.num_partitions, alive=lambda: self._thread.is_alive(), advertise=host,
                           max_reply=max_reply)
        self.group = f"spark-topics-resident-{engine.run_id}"
        task = dict(model=engine.model, run=engine.run_id, directory=engine.checkpoint_dir,
                    seed=engine.settings.seed, layout=layout, address=list(self.hub.address),
                    token=self.hub.token, kill=RESIDENT_TEST_KILL)
        if hosted is None:
            job = handles.barrier().mapPartitions(partial(_resident_task, **task))
        else:
            job = sc.parallelize(hosted, len(hosted)).barrier().mapPartitions(partial(_resident_group_task, **task))

        def run():
            sc.setJobGroup(self.group, description, interruptOnCancel=True)
            try:
                job.collect()
            except Exception as exc:       # noqa: BLE001  (the hub's wait notices; the engine logs it)
                self.failure = exc
        self.sc = sc
        self._thread = threading.Thread(target=run, name="spark-topics resident sampler", daemon=True)
        self._thread.start()
        try:
            self.hub.accept_all()
        except BaseException:       # no task may wait for slots of a stage that will not run
            self.stop(cancel=True)
            raise

    def send(self, plan: SyncPlan, tables: dict, derived: dict, hyper: dict, directive: dict | None) -> None:
        """Start a synchronisation: every task gets the plan, the tables (dense ones the first time whole, then
        the entries that changed), the derived values, the hyperparameters and the directive."""
        message = plan_message(plan, self.layout, tables, derived, hyper, directive, self._held)
        self.hub.send([message] * self.hub.num_partitions)
        self._held = {t.name: tables[t.name].copy() for t in self.layout.tables if not t.keyed}
        self.sent = plan

    def receive(self) -> list:
        """Every partition's records of the synchronisation sent last."""
        self.sent = None
        return [record for header, arrays in self.hub.receive() for record in message_records(header, arrays)]

    def stop(self, cancel: bool = False) -> None:
        self.hub.close(None if cancel else {"kind": "stop"})
        if cancel:
            self.sc.cancelJobGroup(self.group)
        if self._thread is not None:
            self._thread.join(timeout=60)
