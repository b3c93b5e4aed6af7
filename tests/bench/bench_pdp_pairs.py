"""Benchmark (issue 28, 1-2): built-in models against their network specs (``seqlda`` / ``seqlda.json``, ``stm`` /
``stm.json``) trained in this process (no Spark) by the engine's
single-partition loop (``inference.gibbs.local.run_local_tables``) on the bench corpus of
``bench_pdp_perplexity.py`` (run that first: it prepares the corpus), then scored by ``evaluate``'s held-out
estimator (document completion, 50 sweeps, 5 samples). Variants tell where the two differ: the built-in's
sampler (``cmgs``, the thesis' Algorithm 5, or ``exact``), its per-document b_i against one b, b fixed::

    python tests/bench/bench_pdp_pairs.py RUN [RUN ...] [--iterations 100] [--topics 20] [--seed 3]

RUN: ``seqlda`` (alpha fixed 0.1, as bench_pdp_perplexity's ``--fixed-alpha``), ``seqlda-exact``,
``seqlda-fixed-b`` (b = 10 fixed), ``seqlda-exact-fixed-b``, ``seqlda.json`` (as shipped), ``seqlda.json-fixed-b``,
``seqlda.json-indicators`` (the table-indicator sampler instead of the spec's ``sampler``), ``seqlda.json-exact``
(the exact multiplicity sampler, :mod:`inference.pdpnet.multiplicity`), ``stm``,
``stm.json``, ``stm.json-cmgs`` (the spec under CMGS), ``adatm``, ``adatm.json``, ``adatm.json-cmgs`` (CMGS at its
two-parent segments, :mod:`inference.pdpnet.cmgs_dag`), ``adatm.json-exact`` (the exact multiplicity sampler there,
:mod:`inference.pdpnet.multiplicity_dag`), ``hdp-pyp-lda.json`` (table indicators), ``hdp-pyp-lda.json-cmgs`` and
``hdp-pyp-lda.json-exact`` (a shared Pitman-Yor vector under the multiplicity samplers,
:mod:`inference.pdpnet.cmgs_owned`), ``pyp-lda.json`` / ``hca.json`` and their ``-cmgs`` / ``-exact`` (the
Pitman-Yor word side in multiplicity form, :mod:`inference.pdpnet.word_mult`). ``--warm-up N``: each run's model first trains N iterations (numba's
compilation out of the CPU seconds).
Prints the perplexity, the CPU seconds of training and of scoring (``time.process_time``) and b."""
from __future__ import annotations

import argparse
import copy
import time

import bench_common  # noqa: F401  (first: puts the project on sys.path)
from bench_pdp_partitions import common_arguments, web_sentences

BUILT_IN = {"seqlda": {}, "seqlda-exact": {"sampler": "exact"}, "seqlda-fixed-b": {"sample_b": False},
            "seqlda-exact-fixed-b": {"sampler": "exact", "sample_b": False}}


def model_of(run: str, K: int, V: int):
    from drivers.models.pdp_network.model import PdpNetwork
    from drivers.models.seqlda.model import SeqLDA
    from drivers.models.adatm.model import AdaTM
    from drivers.models.stm import STM

    if run == "adatm":
        model = AdaTM(K, V)
        return model, model.initial_hyper()
    if run in ("stm.json", "adatm.json", "stm.json-cmgs", "adatm.json-cmgs", "adatm.json-exact"):
        model = PdpNetwork(K, V)
        return model, model.initial_hyper(network=run[:3] if run.startswith("stm") else "adatm",
                                          sampler=run.partition("-")[2] or None)
    if run.startswith(("hdp-pyp-lda.json", "pyp-lda.json", "hca.json")):   # -cmgs / -exact: cmgs_owned (a shared
        model = PdpNetwork(K, V)                       # Pitman-Yor vector), word_mult (a Pitman-Yor word side)
        name, _, sampler = run.partition(".json")
        return model, model.initial_hyper(network=name, sampler=sampler.lstrip("-") or None)
    if run == "stm":
        model = STM(K, V)
        return model, model.initial_hyper()
    if run in BUILT_IN:
        model = SeqLDA(K, V)
        return model, model.initial_hyper(optimize_alpha=False, **BUILT_IN[run])
    model = PdpNetwork(K, V)
    hyper = model.initial_hyper(network="seqlda")
    if run in ("seqlda.json-fixed-b", "seqlda.json-indicators", "seqlda.json-exact"):
        raw = copy.deepcopy(hyper["network"])
        if run == "seqlda.json-fixed-b":
            raw["parameters"]["b_seg"]["sample"] = False
        else:
            raw["sampler"] = run.rpartition("-")[2]
        hyper = dict(hyper, network=raw)
    elif run != "seqlda.json":
        raise SystemExit(f"unknown run {run!r}")
    return model, hyper


def main() -> None:
    from drivers.evaluation.heldout import score_heldout
    from inference.gibbs.heldout import HeldoutSchedule
    from inference.gibbs.counts import local_vocabulary
    from inference.gibbs.local import count_tables, run_local_tables

    parser = argparse.ArgumentParser()
    parser.add_argument("runs", nargs="+")
    common_arguments(parser)
    parser.add_argument("--warm-up", type=int, default=0)
    args = parser.parse_args()
    train, test = web_sentences()
    block = train.blocks[0][1]
    for run in args.runs:
        model, hyper = model_of(run, args.topics, train.vocab_size)
        prepared = model.prepare_block(block)
        if args.warm_up:
            run_local_tables(model, prepared, args.warm_up, seed=args.seed + 1, hyper=hyper)
        got = {"summary": None, "samples": 0}
        I = args.iterations

        def on_iteration(it, state, hyper, model=model, prepared=prepared, got=got, I=I):
            if it > I - 50 and (I - it) % 10 == 0:          # 5 samples, 10 apart, as bench_pdp_partitions
                tabs, derived = count_tables(model, prepared, state, local_vocabulary(prepared.words))
                got["summary"] = model.summarise_sample(got["summary"], tabs, derived, hyper)
                got["samples"] += 1
        cpu = time.process_time()
        _, state, hyper, tables, derived = run_local_tables(model, prepared, I, seed=args.seed, hyper=hyper,
                                                            on_iteration=on_iteration)
        train_cpu = time.process_time() - cpu
        cpu = time.process_time()
        score = score_heldout(None, model, hyper, got["summary"] / got["samples"], test.blocks,
                              HeldoutSchedule.default(50, 5, 0.5), 1)
        b = hyper.get("b_values") or {"b_mean": hyper.get("b_mean", hyper.get("b"))}
        print(f"{run:24s} perplexity {score['perplexity']:9.2f}  train CPU s {train_cpu:7.1f}  "
              f"score CPU s {time.process_time() - cpu:6.1f}  b {b}", flush=True)


if __name__ == "__main__":
    main()
