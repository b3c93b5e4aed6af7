"""Per-iteration CPU of pdp-network's whole-network mode (issue 28, 2) through the engine's hooks (sweep, hyperparameter
step, statistics with the topics, tables) vs the in-process sampler's sweep and step, on one block, no Spark; the two
chains are checked equal. Run from the repository's root: ``python tests/bench/bench_pdp_whole.py``."""
import json, os, sys, time
sys.path[:0] = [os.getcwd(), os.path.join(os.getcwd(), "tests"), os.path.join(os.getcwd(), "tests", "engines")]
import numpy as np
from test_pdp_network_whole import WORD
from drivers.models.pdp_network.whole_network import NetworkModel
from inference.gibbs.model import SegmentedBlock
from inference.pdpnet.sampler import NetworkSampler
V, K, D = 2000, 20, 500
rng = np.random.default_rng(1)
docs = [(f"d{i:04d}", [list(rng.integers(0, V, 100))]) for i in range(D)]
block = SegmentedBlock.from_segments(docs)
path = "/tmp/bench_pdp_whole_word.json"; open(path, "w").write(json.dumps(WORD))
m = NetworkModel(K, V); hyper = m.initial_hyper(network=path)
state = m.initial_state(block, hyper, 5)
net = m.whole_net(block, hyper["network"]); sm = NetworkSampler(net, seed=5)
local = np.unique(block.words, return_inverse=True)
def engine():
    m.sweep_tables(block, state, hyper, None, None, 0); m.local_hyper_update(block, state, hyper, 0)
    m.partition_stats(block, state, hyper, 0); m.table_counts(block, state, local)
def inproc():
    sm.sweep(); sm.sample_hyper()
for f in (engine, inproc): f()   # warm
for name, f in (("whole-network hooks", engine), ("in-process sampler", inproc)):
    t = time.process_time()
    for _ in range(10): f()
    print(f"{name}: {(time.process_time() - t) / 10:.3f} CPU s per iteration ({D * 100} tokens, K={K}, V={V})")
assert np.array_equal(sm.z, state["z"])
