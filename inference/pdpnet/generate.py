"""Draw a corpus from a network (issue 28, 3: recovery of planted parameters) by its Chinese restaurant franchise
([003] App. A, (E1)): every Pitman-Yor vector is a restaurant with explicit tables; a customer sits at an
occupied table with probability (n_t - a)/(b + C) or opens one with probability (b + a T)/(b + C), and a new
table is a customer of a parent i drawn with probability (gamma_i + S_i)/(sum gamma + T) (rho integrated out,
E9); a Dirichlet root serves value k with probability (alpha + c_k)/(K alpha + C), a fixed uniform 1/dim.
The tokens are drawn one by one, their topic from the topic vector and their word from the word vector of that
topic, so (words, z, s) is one exact draw from the joint with every vector integrated out."""
from __future__ import annotations

import numpy as np

from inference.pdpnet.compile import KIND_DIRICHLET, KIND_UNIFORM, CorpusLayout, compile_network
from inference.pdpnet.spec import parse_network


class _Franchise:
    def __init__(self, net, rng):
        self.net, self.rng = net, rng
        self.cust = np.zeros(net.num_cells)
        self.tp = np.zeros(net.num_cells)
        self.C = np.zeros(net.num_nodes)
        self.T = np.zeros(net.num_nodes)
        self.s = np.zeros(int(net.eoff[-1]), np.int64)
        self.Se = np.zeros(len(net.par_node))
        self.tables = [{} for _ in range(net.num_nodes)]       # value -> list of table sizes

    def _choice(self, weights):
        cum = np.cumsum(weights)
        return min(int(np.searchsorted(cum, self.rng.random() * cum[-1], side="right")), len(weights) - 1)

    def draw(self, j: int) -> int:
        """One customer at vector j: its value, with the franchise updated."""
        net = self.net
        o, d = net.off[j], net.dim[j]
        if net.kind[j] == KIND_UNIFORM:
            v = int(self.rng.integers(d))
        elif net.kind[j] == KIND_DIRICHLET:
            v = self._choice(net.alpha[j] + self.cust[o:o + d])
        else:
            a = net.a_values[net.a_of[j]]
            b = net.b_values[net.b_of[j]]
            if self.rng.random() * (b + self.C[j]) < self.C[j] - a * self.T[j]:
                v = self._choice(self.cust[o:o + d] - a * self.tp[o:o + d])
                sizes = self.tables[j][v]
                sizes[self._choice(np.array(sizes, np.float64) - a)] += 1
            else:
                e0, e1 = net.par_ptr[j], net.par_ptr[j + 1]
                e = e0 + self._choice(net.par_gamma[e0:e1] + (self.Se[e0:e1] if net.gamma_sum[j] >= 0 else 0))
                v = self.draw(int(net.par_node[e]))
                self.tables[j].setdefault(v, []).append(1)
                self.tp[o + v] += 1
                self.T[j] += 1
                self.s[net.eoff[e] + v] += 1
                self.Se[e] += 1
        self.cust[o + v] += 1
        self.C[j] += 1
        return v


def draw_corpus(raw: dict, shape: list[list[int]], num_topics: int, vocab_size: int, seed: int):
    """``(docs, z, s)``: documents -> segments -> word ids with ``shape[d][j]`` tokens in segment j of document d,
    their topics z and the table attributions s of the compiled network of ``docs``. The word draw must not
    depend on the words (no previous_word index)."""
    if "previous_word" in str(raw):
        raise ValueError("draw_corpus: a network indexed by previous_word is not supported")
    layout = CorpusLayout.of([[[0] * n for n in doc] for doc in shape], vocab_size)
    net = compile_network(parse_network(raw), layout, num_topics)
    crf = _Franchise(net, np.random.default_rng(seed))
    N = len(net.words)
    z = np.zeros(N, np.int64)
    words = np.zeros(N, np.int64)
    for i in range(N):
        z[i] = crf.draw(int(net.topic_inst[i]))
        words[i] = crf.draw(int(net.word_inst[i, z[i]]))
    docs, pos = [], 0
    for doc in shape:
        segs = []
        for m in doc:
            segs.append([int(x) for x in words[pos:pos + m]])
            pos += m
        docs.append(segs)
    return docs, z, crf.s
