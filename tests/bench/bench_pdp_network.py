"""Tokens per second of the pdp-network sampler (lda.json, stm.json, on the engine contract) against the lda-gibbs and
stm kernels on a synthetic corpus (1,000 documents x 5 segments x 20 tokens, V = 5,000, K = 50); issue 28 target:
within 2x of lda-gibbs for LDA. Run: .venv/bin/python tests/bench/bench_pdp_network.py"""
import os, sys, time
sys.path[:0] = [os.getcwd()]
import numpy as np
from inference.gibbs.block import SegmentedBlock
from drivers.models.pdp_network.model import PdpNetwork
from drivers.models.lda_gibbs.model import lda_sweep
from drivers.models.stm import STM
rng = np.random.default_rng(0)
D, S, L, V, K = 1000, 5, 20, 5000, 50
words = rng.integers(0, V, D * S * L).astype(np.int32)
blk = SegmentedBlock(np.array([f"d{i}" for i in range(D)], dtype=object), np.arange(0, D * S + 1, S, dtype=np.int64),
                     np.arange(0, D * S * L + 1, L, dtype=np.int64), words)
N = len(words)
def timed(f, reps=3):
    f(); t = time.process_time()
    for _ in range(reps): f()
    return (time.process_time() - t) / reps
for spec in ["lda", "stm"]:
    m = PdpNetwork(K, V); h = m.initial_hyper(network=spec)
    nwk, nk = np.zeros((V, K), np.int32), np.zeros(K, np.int64)
    st = m.init_state(blk, h, nwk, nk, 1)
    it = [0]
    def f():
        it[0] += 1; m.sweep(blk, st, h, nwk, nk, it[0])
    print(f"pdp-network {spec}.json: {N / timed(f):,.0f} tokens/s")
z = rng.integers(0, K, N).astype(np.int32); nwk = np.zeros((V, K), np.int32); nk = np.zeros(K, np.int32)
np.add.at(nwk, (words, z), 1); np.add.at(nk, z, 1)
alpha = np.full(K, 0.1)
print(f"lda-gibbs kernel: {N / timed(lambda: lda_sweep(blk.token_ptr(), words, z, nwk, nk, alpha, 0.01, np.zeros((1,1)), False, 3)):,.0f} tokens/s")
m = STM(K, V); h = m.initial_hyper(); nwk = np.zeros((V, K), np.int32); nk = np.zeros(K, np.int64)
st = m.init_state(blk, h, nwk, nk, 1)
print(f"stm kernel: {N / timed(lambda: m.sweep(blk, st, h, nwk, nk, 5)):,.0f} tokens/s")
