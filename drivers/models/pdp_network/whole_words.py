"""The word side of held-out documents in whole-network mode (issue 28, 3): the network's own word predictive
(eq 5.10 with the word side's shared vectors fixed at the trained state) instead of the topics' posterior means.

A word family indexed by neither document nor segment is *shared* ([topic], [topic, previous_word], [topic,
column:X], a chain's levels, a word vector's several parents); one indexed by document or segment is the held-out
document's *own* (burst[topic, document]). Training publishes every shared word cell's (n, tc, tp) and its parent
edges' s in the keyed table ``whole_words`` when the held-out path reads it (:func:`needs_predictive`; a word side
indexed by [topic] alone neither publishes nor saves it) (1 column; row ((base 16 + slot) V + word), base = (family << 32) +
key, slot 0 n, 1 tc, 2 tp, 3 + r the s of the vector's r-th parent edge), saved as ``whole_word_*.npy``. Held out,
a shared word vector is FROZEN at its trained posterior mean (thesis (7.12) of those counts, the trained a and b):
as the topics of eq 5.10 and the split engine's burst side (phi[topic] fixed), so that a word side indexed by
[topic] alone keeps its numbers (its posterior means are topic_word.npy's; that path is unchanged). In the
block's network (compiled with its word side) a shared word vector becomes a Dirichlet root whose customers are
its mean x 2^50 (:func:`frozen_net`; (1e-6 + m 2^50) / (1e-6 V + 2^50) is m to ~1e-15, and the block's own
customers move it by at most N / 2^50). The document's own word vectors start empty and are sampled by the
network sampler's exact moves (document completion, ``infer``: :mod:`.whole_heldout`'s sweep, the word side in
the network), their tables sent up to the frozen parents. What is scored:

- document completion: every scored token p(w) = sum_k nu_k P_word(k, w), P_word the posterior mean of the token's
  word vector at topic k given the sample's own word cells and the frozen shared ones (:func:`scored_rows`,
  :func:`.whole_heldout.completion`);
- left to right: no own word vector: the frozen means at every token's word vector (rows of
  :func:`.left_to_right_scores.network_scores`); an own word vector per (topic, document or segment) with one
  frozen Pitman-Yor parent (burstiness): :func:`inference.pdpnet.bigram_left_to_right.bigram_particles`, every
  particle's earlier tokens seated in the document's own vectors by the restaurant (join a table: size - a; open
  one: (b + a T) P_parent(w)), exact for p(w | the frozen shared state); over several frozen parents mixed by rho
  :func:`inference.pdpnet.own_word_particles.own_word_particles`, the same with a new table
  sent up edge e with weight (b + a T) rho_e P_e(w); a chain of own vectors (burst[topic, segment] over
  burst[topic, document] over shared parents) the same kernel, a new table's customer seated one level up by the
  same process, and so for own vectors over own and shared parents mixed by rho; an own Dirichlet(beta) root
  (DCMLDA's word vector per topic per document) as a DP(0, V beta) over the uniform, whose predictive is the same
  Polya urn (beta + c_w) / (V beta + C); other own shapes (an own uniform family, own families beside the
  token's): the frozen means of the empty own vectors (the protocol says so).
"""
from __future__ import annotations

import json

import numpy as np

from drivers import storage
from drivers.models.pdp_network.words_bigram import PSEUDO
from inference.pdpnet import kernels
from inference.pdpnet.compile import KIND_DIRICHLET, compile_network
from inference.pdpnet.sampler import posterior_means
from inference.pdpnet.spec import parse_network

TABLE = "whole_words"
ARRAYS = ("whole_word_keys", "whole_word_counts")
KEY_BITS, MAX_FAMILIES, SLOTS = 32, 64, 16
#: a frozen shared word vector's customers per unit of mean; its root's prior count per word
SCALE, FROZEN_ALPHA = float(2 ** 50), 1e-6
#: the split engine's burst side's pseudo-count scale (bigram_particles' psi = phi to ~1e-12)
ROOT_SCALE = 1e12


#: the table's keys hold V < 2^20 words (a larger vocabulary: no table, the held-out word factor the posterior means)
MAX_V = 1 << 20


def rows(V: int) -> int:
    """The keyed table's row space."""
    if V >= MAX_V:
        raise ValueError("whole-network mode: the word side's keyed table holds V < 2^20 words")
    return (MAX_FAMILIES << KEY_BITS) * SLOTS * int(V)


def _owned(node) -> bool:
    return bool({"document", "segment"} & set(node.index))


def word_families(spec) -> tuple[list, list]:
    """(shared, own) family numbers of the word side (module docstring)."""
    fams = [(f, spec.nodes[name]) for f, name in enumerate(spec.order) if spec.nodes[name].over == "word"]
    return [f for f, nd in fams if not _owned(nd)], [f for f, nd in fams if _owned(nd)]


def needs_predictive(spec) -> bool:
    """Whether the topics' posterior means are not already the word predictive: a word side indexed by more than
    [topic], or with a vector of the document's own."""
    return list(spec.nodes[spec.word.node].index) != ["topic"] or bool(word_families(spec)[1])


def cells_per_token(spec) -> int:
    """The most nonzero rows a token adds to the table: a customer or a table at every shared word family, an s per
    parent edge."""
    shared = [nd for nd in spec.nodes.values() if nd.over == "word" and not _owned(nd)]
    return max(1, 3 * len(shared) + sum(len(nd.parents) for nd in shared))


def _bases(net, js) -> np.ndarray:
    if np.any(net.key[js] >= 1 << KEY_BITS) or np.any(net.family[js] >= MAX_FAMILIES):
        raise ValueError("whole-network mode: a word vector's key exceeds the table's row space")
    return (net.family[js].astype(np.int64) << KEY_BITS) + net.key[js]


def _shared(net) -> np.ndarray:
    return np.flatnonzero(np.isin(net.family, word_families(net.spec)[0]))


def _shared_edges(net, js) -> tuple:
    """(edges whose child is a shared word vector, the child, its rank among the child's parents)."""
    child = np.repeat(np.arange(net.num_nodes), np.diff(net.par_ptr))
    es = np.flatnonzero(np.isin(child, js))
    rank = es - net.par_ptr[child[es]]
    if np.any(rank >= SLOTS - 3):
        raise ValueError(f"whole-network mode: a word vector with more than {SLOTS - 3} parents")
    return es, child[es], rank


def contribution(net, cnt: dict, s: np.ndarray) -> tuple:
    """The training partition's rows of the table (module docstring): (keys, (n, 1) int32 counts)."""
    V = net.V
    js = _shared(net)
    cells = net.off[js][:, None] + np.arange(V)
    base = _bases(net, js)[:, None] * SLOTS
    keys, vals = [], []
    for slot, arr in enumerate((cnt["n"], cnt["tc"], cnt["tp"])):
        keys.append(((base + slot) * V + np.arange(V)).ravel())
        vals.append(arr[cells].ravel())
    es, ch, rank = _shared_edges(net, js)
    keys.append((((_bases(net, ch) * SLOTS + 3 + rank)[:, None]) * V + np.arange(V)).ravel())
    vals.append(s[net.eoff[es][:, None] + np.arange(V)].ravel())
    keys, vals = np.concatenate(keys), np.concatenate(vals)
    nz = vals != 0
    return keys[nz], vals[nz].astype(np.int32).reshape(-1, 1)


def has_files(directory: str) -> bool:
    return storage.exists(storage.join(directory, f"{ARRAYS[0]}.npy"))


def _lookup(trained: tuple, want: np.ndarray) -> np.ndarray:
    keys, counts = trained
    out = np.zeros(want.shape, np.int64)
    if len(keys):
        pos = np.minimum(np.searchsorted(keys, want), len(keys) - 1)
        hit = keys[pos] == want
        out[hit] = counts.reshape(-1)[pos[hit]]
    return out


def trained_means(trained: tuple, net, avals, bvals) -> np.ndarray:
    """(cells,) the posterior means of the network's shared word vectors of the trained counts (else 0)."""
    V, J = net.V, net.num_nodes
    js = _shared(net)
    cnt = {k: np.zeros(net.num_cells, np.int64) for k in ("n", "tc", "tp")}
    cells = net.off[js][:, None] + np.arange(V)
    base = _bases(net, js)[:, None] * SLOTS
    for slot, name in enumerate(("n", "tc", "tp")):
        cnt[name][cells] = _lookup(trained, (base + slot) * V + np.arange(V))
    node = np.repeat(np.arange(J), net.dim)
    for name, tot in (("n", "Nn"), ("tc", "TC"), ("tp", "TP")):
        cnt[tot] = np.bincount(node, cnt[name], J).astype(np.int64)
    cnt["Se"] = np.zeros(len(net.par_node), np.int64)
    es, ch, rank = _shared_edges(net, js)
    cnt["Se"][es] = _lookup(trained, (_bases(net, ch) * SLOTS + 3 + rank)[:, None] * V + np.arange(V)).sum(axis=1)
    means = posterior_means(net, cnt, avals, bvals)
    out = np.zeros(net.num_cells)
    out[cells] = means[cells]
    return out


def frozen_net(model, block, hyper):
    """The block's network with its word side, every shared word vector a Dirichlet root holding its trained
    mean x 2^50 customers (``net.frozen``: those customers per cell; ``net.means``: the trained means); memoised
    per block."""
    raw = hyper["network"]
    key = "held-words:" + json.dumps(raw, sort_keys=True)
    net = model._memo("nets").get(block, key)
    if net is not None:
        return net
    net = compile_network(parse_network(raw), model.corpus_layout(block), model.num_topics, word_side=True)
    avals, bvals = model._values(net, hyper)
    means = trained_means(model._trained_words, net, avals, bvals)
    js = _shared(net)
    net.kind, net.alpha = net.kind.copy(), net.alpha.copy()
    net.kind[js], net.alpha[js] = KIND_DIRICHLET, FROZEN_ALPHA
    cells = (net.off[js][:, None] + np.arange(net.V)).ravel()
    net.frozen = np.zeros(net.num_cells, np.int64)
    net.frozen[cells] = np.rint(means[cells] * SCALE).astype(np.int64)
    net.means = means
    net.ancestors = kernels.ancestor_lists(net.par_ptr, net.par_node)
    return model._memo("nets").put(block, net, key)


FROZEN_PROTOCOL = "every token's word vector's posterior mean, the shared word vectors frozen at the trained state"
OWN_NOT_CARRIED = " (the document's own word vectors empty: not carried by the particles in this shape)"
BURST_PROTOCOL = ("every particle's earlier tokens seated in the document's own word vectors (empty at the start) "
                  "over their shared parent frozen at the trained state")
URN_PROTOCOL = ("every particle's earlier tokens counted in the document's own Dirichlet word vectors (empty at the "
                "start): a Polya urn per topic")


def prior_rows(model, doc, hyper) -> np.ndarray:
    """(N, K) a test document's tokens' word predictive before any of its tokens: the frozen shared vectors'
    means, an own vector's of its empty state."""
    net = frozen_net(model, doc, hyper)
    cnt = {k: np.zeros(net.num_cells, np.int64) for k in ("tc", "tp")}
    cnt["n"] = net.frozen
    node = np.repeat(np.arange(net.num_nodes), net.dim)
    for name, tot in (("n", "Nn"), ("tc", "TC"), ("tp", "TP")):
        cnt[tot] = np.bincount(node, cnt[name], net.num_nodes).astype(np.int64)
    cnt["Se"] = np.zeros(len(net.par_node), np.int64)
    return token_rows(net, cnt, *model._values(net, hyper), doc.words)


def _codes(net, js) -> np.ndarray:
    return (net.family[js].astype(np.int64) << 40) + net.key[js]


def token_rows(net, cnt, avals, bvals, words) -> np.ndarray:
    """(N, K) every token's word vector's posterior mean at its word, per topic."""
    means = posterior_means(net, cnt, avals, bvals)
    return means[net.off[net.word_inst] + np.asarray(words, np.int64)[:, None]]


def scored_rows(model, observed, state, scored, hyper, obs_cnt) -> np.ndarray:
    """(N, K) P_word(k, w) of the scored tokens: the scored block's network, its shared word vectors frozen, its
    own word vectors' cells and edges those of the observed sample's (found by (family, key): the same documents
    and segments)."""
    sc = frozen_net(model, scored, hyper)
    ob = frozen_net(model, observed, hyper)
    V, J = sc.V, sc.num_nodes
    own = word_families(sc.spec)[1]
    cnt = {k: np.zeros(sc.num_cells, np.int64) for k in ("n", "tc", "tp")}
    cnt["n"] += sc.frozen
    s = np.zeros(int(sc.eoff[-1]), np.int64)
    js, jo = np.flatnonzero(np.isin(sc.family, own)), np.flatnonzero(np.isin(ob.family, own))
    if len(js) and len(jo):
        order = np.argsort(_codes(ob, jo))
        codes = _codes(ob, jo)[order]
        pos = np.minimum(np.searchsorted(codes, _codes(sc, js)), len(codes) - 1)
        hit = codes[pos] == _codes(sc, js)
        js, jo = js[hit], jo[order][pos[hit]]
        dst, src = sc.off[js][:, None] + np.arange(V), ob.off[jo][:, None] + np.arange(V)
        for name in ("n", "tc", "tp"):
            cnt[name][dst] = obs_cnt[name][src]
        for r in range(int(np.diff(sc.par_ptr)[js].max(initial=0))):
            has = np.diff(sc.par_ptr)[js] > r
            es, eo = sc.par_ptr[js[has]] + r, ob.par_ptr[jo[has]] + r
            s[sc.eoff[es][:, None] + np.arange(V)] = state["s"][ob.eoff[eo][:, None] + np.arange(V)]
    node = np.repeat(np.arange(J), sc.dim)
    for name, tot in (("n", "Nn"), ("tc", "TC"), ("tp", "TP")):
        cnt[tot] = np.bincount(node, cnt[name], J).astype(np.int64)
    cnt["Se"] = np.add.reduceat(s, sc.eoff[:-1]) if len(sc.par_node) else np.zeros(0, np.int64)
    cnt["Se"][np.diff(sc.eoff) == 0] = 0
    return token_rows(sc, cnt, *model._values(sc, hyper), scored.words)


def _own_graph(spec) -> list | None:
    """The token's word family and the own families above it (through own parents), when every one is a Pitman-Yor
    family or a Dirichlet root (:func:`own_words` seats it as a DP over the uniform) and they are the document's
    only own word families; else None."""
    own = word_families(spec)[1]
    names, todo = [], [spec.word.node]
    while todo:
        name = todo.pop()
        if name in names:
            continue
        if spec.order.index(name) not in own or spec.nodes[name].kind not in ("pyp", "dirichlet"):
            return None
        names.append(name)
        todo += [p.node for p in spec.nodes[name].parents if spec.order.index(p.node) in own]
    return names if sorted(spec.order.index(nm) for nm in names) == sorted(own) else None


def own_shape(spec) -> str | None:
    """"one" when the token's word family is the document's only own word family, a Pitman-Yor vector over one
    shared parent (what :func:`bigram_particles` seats), "several" over several shared parents mixed by rho,
    "chain" several own Pitman-Yor families, each over the next (the top over shared parents), "graph" several
    own families otherwise (an own vector over own and shared parents; both and "several":
    :func:`inference.pdpnet.own_word_particles.own_word_particles`), else None."""
    names = _own_graph(spec)
    if names is None:
        return None
    if len(names) == 1:
        return "one" if len(spec.nodes[names[0]].parents) == 1 else "several"
    return "chain" if all(len(spec.nodes[nm].parents) == 1 for nm in names[:-1]) else "graph"


def _own_paths(net) -> tuple:
    """The tokens' own vectors reached up own parents: [(N, K) vectors], [(path, edge rank, parent path)]."""
    own = word_families(net.spec)[1]
    paths, links, p = [net.word_inst], [], 0
    while p < len(paths):
        j = paths[p]
        for r in range(int(net.par_ptr[j[0, 0] + 1] - net.par_ptr[j[0, 0]])):
            up = net.par_node[net.par_ptr[j] + r]
            if net.family[up[0, 0]] in own:
                links.append((p, r, len(paths)))
                paths.append(up)
        p += 1
    return paths, links


def _ancestors(upw) -> tuple:
    """(optr, order): every pair and its own ancestors, parents first."""
    memo: dict = {}

    def walk(u):
        if u not in memo:
            out = []
            for v in upw[u]:
                out += [x for x in (walk(int(v)) if v >= 0 else []) if x not in out]
            memo[u] = out + [u]
        return memo[u]

    lists = [walk(u) for u in range(len(upw))]
    return (np.concatenate([[0], np.cumsum([len(x) for x in lists])]).astype(np.int64),
            np.array([x for lst in lists for x in lst], np.int64))


def own_words(model, doc, hyper, topic_net) -> tuple:
    """A test document's word-side arguments of :func:`inference.pdpnet.own_word_particles.own_word_particles`:
    its own word vectors (the token's and those above it) the contexts, their distinct (vector, word) the pairs,
    each pair's own parents' pairs and its ancestors, the frozen parents' means at the pairs (U, K, E), every own
    vector's gamma and its sum, discount and concentration (a mixture node is over topics only)."""
    net = frozen_net(model, doc, hyper)
    paths, links = _own_paths(net)
    N, K = net.word_inst.shape
    keys, ctx = np.unique(np.stack([j[:, 0] for j in paths]), return_inverse=True)     # (paths, N) contexts
    ctx = ctx.reshape(len(paths), N)
    words, widx = np.unique(doc.words, return_inverse=True)
    pair, inv = np.unique(ctx * len(words) + widx.reshape(1, -1), return_inverse=True)
    inv = inv.reshape(len(paths), N)
    deg = net.par_ptr[keys + 1] - net.par_ptr[keys]
    names = net.spec.order
    nodes = [net.spec.nodes[names[net.family[j]]] for j in keys]
    root = np.array([nd.kind == "dirichlet" for nd in nodes])     # an own Dirichlet(alpha) root: a DP(0, V alpha)
    E = max(1, int(deg.max()))                                    # over the uniform (the same Polya urn predictive)
    upw = np.full((len(pair), E), -1, np.int64)
    for p, r, q in links:
        upw[inv[p], r] = inv[q]
    P = np.zeros((len(pair), K, E))
    word = words[widx.reshape(-1)][:, None]
    for p, j in enumerate(paths):
        if root[np.searchsorted(keys, j[0, 0])]:
            P[inv[p], :, 0] = 1.0 / net.V
        for r in range(int(net.par_ptr[j[0, 0] + 1] - net.par_ptr[j[0, 0]])):
            if not any(link[:2] == (p, r) for link in links):
                P[inv[p], :, r] = net.means[net.off[net.par_node[net.par_ptr[j] + r]] + word]
    gamma = np.zeros((len(keys), E))
    for c, j in enumerate(keys):
        gamma[c, :deg[c]] = net.par_gamma[net.par_ptr[j]:net.par_ptr[j + 1]]
    gamma[root, 0] = 1.0
    gamma_sum = np.where(root, 1.0, net.gamma_sum[keys])
    a = np.array([0.0 if nd.kind == "dirichlet" else hyper["a_values"][nd.a] for nd in nodes], np.float64)
    b = np.array([net.V * nd.alpha if nd.kind == "dirichlet" else hyper["b_values"][nd.b] for nd in nodes],
                 np.float64)
    optr, order = _ancestors(upw)
    return (inv[0].astype(np.int64), (pair // len(words)).astype(np.int64), upw, optr, order, len(keys), P, gamma,
            np.ascontiguousarray(gamma_sum, np.float64), a, b)


def document_words(model, doc, hyper, topic_net) -> tuple:
    """A test document's word-side arguments of :func:`inference.pdpnet.bigram_left_to_right.bigram_particles`:
    its own word vectors the contexts (one per (document or segment) instance), its distinct (context, word) the
    pairs, their cells empty, the frozen parent's mean x 1e12 the roots' pseudo-counts (beta0 = PSEUDO), as
    :func:`.burst_heldout.document_words`."""
    net = frozen_net(model, doc, hyper)
    name = net.spec.word.node
    node = net.spec.nodes[name]
    K, V = net.K, net.V
    inst = net.word_inst                                     # (N, K) the document's own vectors
    parent = net.par_node[net.par_ptr[inst]]                 # (N, K) their frozen parents
    if np.any(parent != parent[:1]):
        raise ValueError("whole-network mode: a document's own word vectors at one topic have different parents")
    ctx_keys, ctx = np.unique(inst[:, 0], return_inverse=True)
    words, widx = np.unique(doc.words, return_inverse=True)
    pair, uidx = np.unique(ctx.reshape(-1) * len(words) + widx.reshape(-1), return_inverse=True)
    means = net.means[net.off[parent[0]][None, :] + words[:, None]]          # (U_w, K)
    x = means * ROOT_SCALE
    troot_sum = ROOT_SCALE * net.means[net.off[parent[0]][:, None] + np.arange(V)].sum(axis=1)
    U, C = len(pair), len(ctx_keys)
    return (uidx.reshape(-1).astype(np.int64), (pair % len(words)).astype(np.int64),
            (pair // len(words)).astype(np.int64), np.zeros((U, K), np.int64), np.zeros((U, K), np.int64),
            np.zeros((C, K), np.int64), np.zeros((C, K), np.int64), np.ascontiguousarray(x), troot_sum, V,
            topic_net.a_names.index(node.a), topic_net.b_names.index(node.b), PSEUDO)
