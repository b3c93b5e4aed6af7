import time
import numpy as np
import bench_common
from bench_pdp_partitions import web_sentences
from bench_pdp_pairs import model_of
from inference.gibbs.local import run_local_tables
tr, te = web_sentences(); block = tr.blocks[0][1]
res = {}
models = {}
for run in ["seqlda", "seqlda.json"]:
    model, hyper = model_of(run, 20, tr.vocab_size)
    prepared = model.prepare_block(block)
    _, state, hyper, tables, derived = run_local_tables(model, prepared, 20, seed=4, hyper=hyper)
    models[run] = (model, prepared, state, hyper, tables["nwk"], derived["nk"])
for rep in range(3):
    for run, (model, prepared, state, hyper, nwk, nk) in models.items():
        t = time.process_time()
        for it in range(10):
            model.sweep(prepared, state, hyper, nwk, nk, 100 + it)
        print(run, rep, round((time.process_time() - t) / 10, 4), flush=True)
import inference.pdpnet.cmgs_run as cr
model, prepared, state, hyper, nwk, nk = models["seqlda.json"]
orig = cr.cmgs_sweep
acc = [0.0]
def timed(*a):
    t = time.process_time(); orig(*a); acc[0] += time.process_time() - t
cr.cmgs_sweep = timed
t = time.process_time()
for it in range(10):
    model.sweep(prepared, state, hyper, nwk, nk, 200 + it)
print("model.sweep", (time.process_time() - t) / 10, "kernel", acc[0] / 10)
