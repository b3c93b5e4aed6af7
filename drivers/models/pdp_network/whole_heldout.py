"""Held-out and new documents of a network trained in whole-network mode (issue 28, 2;
:mod:`drivers.models.pdp_network.whole_network`), and the trained shared topic vectors they start from.

The topic side's vectors indexed neither by document nor by segment (a corpus-level root or Pitman-Yor vector, one
per kept column's value, per previous word) are shared by every document. Training publishes their cells' (n, tc,
tp) and their parent edges' s in two keyed tables (``whole_shared``: row ((family << 32) + key) 4 + {0, 1, 2};
``whole_shared_s``: row ((family << 32) + key) 16 + the edge's rank among the vector's parents; K columns), saved as
``whole_shared_*.npy``/``whole_edge_*.npy``. A test block's network (its topic side, the topics frozen: eq 5.10)
finds the same vectors by (family, key) and starts from their trained counts: their parent edges' s in its own s,
the customers the training documents sent them as extra customers ``extra`` (never removed: no token of the block
is theirs). Document completion and ``infer`` sweep that state with the network sampler (the block's documents
share the trained counts during scoring, as the split engine's held-out sweeps share a corpus-level root's);
left to right seats a document's customers at a shared Pitman-Yor vector by the restaurant continued from the
trained (c, t) (:mod:`inference.pdpnet.doc_restaurant`), exact in the model for p(w | those tables, the topics).
When the topics' posterior means are not the word predictive (:attr:`word_predictive`: a word side indexed by more
than [topic], or with the document's own word vectors), the block's network has its word side, the shared word
vectors frozen at the trained state (:func:`held_net`, :mod:`.whole_words`): the sweeps sample the own word
vectors too, completion scores the word vectors' predictive (:func:`completion`), left to right the particles carry
the own word cells (:func:`word_hooks`).
"""
from __future__ import annotations

import numpy as np

from drivers import storage
from drivers.models.pdp_network import left_to_right_scores, whole_words
from inference.gibbs import heldout
from inference.pdpnet import kernels, sweep as network
from inference.pdpnet.compile import KIND_PYP
from inference.pdpnet.own_word_particles import own_word_particles
from inference.pdpnet.spec import parse_network
from inference.pdpnet.sampler import NO_ENGINE, StirlingStack, rebuild_counts

CELLS, EDGES = "whole_shared", "whole_shared_s"
ARRAYS = ("whole_shared_keys", "whole_shared_counts", "whole_edge_keys", "whole_edge_counts")
#: a vector's key (its flat index in its family) stays below 2^KEY_BITS, its family below MAX_FAMILIES; the keyed
#: tables' row space
KEY_BITS, MAX_FAMILIES, MAX_EDGES = 32, 64, 16
ROWS = (MAX_FAMILIES << KEY_BITS) * MAX_EDGES
#: a held-out state's extra customers per cell (the training documents' at the shared vectors)
HELD = "extra"
NO_DRIFT = np.zeros(0)


def shared_nodes(net) -> np.ndarray:
    """(J,) bool: the vectors of topic families indexed neither by document nor by segment."""
    sp = net.spec
    fams = [f for f, name in enumerate(sp.order) if sp.nodes[name].over == "topic"
            and not {"document", "segment"} & set(sp.nodes[name].index)]
    return np.isin(net.family, fams)


def cells_per_token(spec) -> tuple[int, int]:
    """The most nonzero cells a token adds to ``whole_shared`` (a customer, or a table, at one vector of every shared
    family) and to ``whole_shared_s`` (one s per parent edge of those vectors)."""
    shared = [node for node in spec.nodes.values() if node.over == "topic"
              and not {"document", "segment"} & set(node.index)]
    return max(1, 3 * len(shared)), max(1, sum(len(node.parents) for node in shared))


def _bases(net, js) -> np.ndarray:
    if np.any(net.key[js] >= 1 << KEY_BITS) or np.any(net.family[js] >= MAX_FAMILIES):
        raise ValueError("whole-network mode: a shared vector's key exceeds the tables' row space")
    return (net.family[js].astype(np.int64) << KEY_BITS) + net.key[js]


def _edges(net, shared) -> tuple:
    """(edges of shared vectors, their keys in ``whole_shared_s``)."""
    child = np.repeat(np.arange(net.num_nodes), np.diff(net.par_ptr))
    es = np.flatnonzero(shared[child])
    rank = es - net.par_ptr[child[es]]
    if np.any(rank >= MAX_EDGES):
        raise ValueError(f"whole-network mode: a shared vector with more than {MAX_EDGES} parents")
    return es, _bases(net, child[es]) * MAX_EDGES + rank


def shared_contribution(net, cnt: dict, s: np.ndarray) -> dict:
    """The partition's rows of both keyed tables (module docstring)."""
    shared = shared_nodes(net)
    js = np.flatnonzero(shared)
    K = net.K
    base = _bases(net, js)
    idx = net.off[js][:, None] + np.arange(K)
    keys = np.concatenate([4 * base, 4 * base + 1, 4 * base + 2])
    counts = np.concatenate([cnt["n"][idx], cnt["tc"][idx], cnt["tp"][idx]]).astype(np.int32)
    es, ekeys = _edges(net, shared)
    ecounts = s[net.eoff[es][:, None] + np.arange(K)].astype(np.int32)
    return {CELLS: (keys, counts.reshape(-1, K)), EDGES: (ekeys, ecounts.reshape(-1, K))}


def trained_of_tables(tables: dict) -> dict:
    return {name: (np.asarray(tables[name].keys, np.int64), np.asarray(tables[name].counts, np.int64))
            for name in (CELLS, EDGES)}


def saved(trained: dict) -> dict:
    return {ARRAYS[0]: trained[CELLS][0], ARRAYS[1]: trained[CELLS][1], ARRAYS[2]: trained[EDGES][0],
            ARRAYS[3]: trained[EDGES][1]}


def trained_of_arrays(arrays: dict) -> dict:
    return {CELLS: (np.asarray(arrays[ARRAYS[0]], np.int64), np.asarray(arrays[ARRAYS[1]], np.int64)),
            EDGES: (np.asarray(arrays[ARRAYS[2]], np.int64), np.asarray(arrays[ARRAYS[3]], np.int64))}


def has_files(directory: str) -> bool:
    return storage.exists(storage.join(directory, f"{ARRAYS[0]}.npy"))


def _lookup(table: tuple, want: np.ndarray, K: int) -> np.ndarray:
    """(len(want), K) the rows of a keyed table at ``want`` (zeros where absent)."""
    keys, counts = table
    out = np.zeros((len(want), K), np.int64)
    if len(keys):
        pos = np.minimum(np.searchsorted(keys, want), len(keys) - 1)
        hit = keys[pos] == want
        out[hit] = counts[pos[hit]]
    return out


def trained_start(trained: dict, net) -> tuple:
    """(s with the shared vectors' parent edges' trained s, extra customers per cell, the shared cells (idx), their
    trained customers c and tables t) of a test block's network (module docstring)."""
    shared = shared_nodes(net)
    js = np.flatnonzero(shared)
    K = net.K
    base = _bases(net, js)
    idx = net.off[js][:, None] + np.arange(K)
    c_tr = _lookup(trained[CELLS], 4 * base, K) + _lookup(trained[CELLS], 4 * base + 1, K)
    t_tr = _lookup(trained[CELLS], 4 * base + 2, K)
    s = np.zeros(int(net.eoff[-1]), np.int64)
    es, ekeys = _edges(net, shared)
    s[net.eoff[es][:, None] + np.arange(K)] = _lookup(trained[EDGES], ekeys, K)
    from_s = rebuild_counts(net, np.zeros(0, np.int64), s, word_side=False)
    extra = np.zeros(net.num_cells, np.int64)
    extra[idx] = c_tr - from_s["tc"][idx]
    if np.any(extra < 0) or not np.array_equal(from_s["tp"][idx], t_tr):
        raise ValueError("whole-network mode: the trained shared vectors' tables disagree with their edges")
    return s, extra, idx, c_tr, t_tr


def held_net(model, block, hyper):
    """A held-out block's network: with its word side, the shared word vectors frozen
    (:func:`.whole_words.frozen_net`), when the topics' posterior means are not the word predictive; else its
    topic side (the word factor the frozen topics)."""
    return whole_words.frozen_net(model, block, hyper) if model.word_predictive else model._compiled(block, hyper)


def counts(net, state: dict) -> dict:
    """The kernels' counts of a held-out state: of (z, s), the extra customers added (the word side's too when the
    network has it: :func:`held_net`)."""
    cnt = rebuild_counts(net, state["z"].astype(np.int64), state["s"], word_side=hasattr(net, "frozen"))
    extra = state[HELD]
    cnt["n"] += extra
    cnt["Nn"] += np.bincount(np.repeat(np.arange(net.num_nodes), net.dim), extra, net.num_nodes).astype(np.int64)
    pyp_cells = np.repeat(net.kind == KIND_PYP, net.dim)
    if pyp_cells.any():
        cnt["mx"][0] = max(int(cnt["mx"][0]), int((cnt["n"] + cnt["tc"])[pyp_cells].max()))
    return cnt


def _run(model, net, state, cnt, hyper, nwk, nk, seed, frozen_phi, init) -> None:
    """The network sampler's cycle on a held-out block (the split model's, :meth:`PdpNetwork._run`, with its
    topic-word table or the frozen topics as the word factor)."""
    if getattr(net, "ancestors", None) is None:
        net.ancestors = kernels.ancestor_lists(net.par_ptr, net.par_node)
    avals, bvals = model._values(net, hyper)
    stirling = StirlingStack(avals, sampled=[net.spec.params[n].sample for n in net.a_names])
    frozen = frozen_phi is not None
    phi = np.ascontiguousarray(frozen_phi, dtype=np.float64) if frozen else np.zeros((1, 1))
    engine = NO_ENGINE if hasattr(net, "frozen") else (True, nwk, nk, float(hyper["beta"]), phi, frozen)
    z = state["z"].astype(np.int64)
    pos, reseed = 0, True
    while pos >= 0:
        stirling.ensure(cnt["mx"][0], cnt["mx"][1])
        pos = network.network_sweep(
            pos, reseed, seed, True, net.words, z, net.topic_inst, net.word_inst, *net.ancestors, net.kind, net.dim,
            net.off, net.alpha, net.a_of, net.b_of, net.par_ptr, net.par_node, net.par_gamma, net.gamma_sum, avals,
            bvals, stirling.L3, cnt["n"], cnt["tc"], cnt["tp"], cnt["Nn"], cnt["TC"], cnt["TP"], state["s"],
            cnt["Se"], net.eoff, cnt["mx"], init, *engine, NO_DRIFT)
        reseed = False
    state["z"][:] = z


def init_state(model, block, hyper, nwk, nk, seed) -> dict:
    """A held-out block's first state: random topics added token by token (the split model's initialisation) on the
    trained shared vectors."""
    net = held_net(model, block, hyper)
    s, extra, _, _, _ = trained_start(model._trained_whole, net)
    if hasattr(net, "frozen"):
        extra += net.frozen
    z = np.random.default_rng(seed).integers(0, model.num_topics, block.n_tokens).astype(np.int32)
    state = {"z": z, "s": s, HELD: extra}
    cnt = counts(net, {"z": np.zeros(0, np.int32), "s": s, HELD: extra})
    _run(model, net, state, cnt, hyper, nwk, nk, seed, None, True)
    return state


def sweep(model, block, state, hyper, nwk, nk, seed, frozen_phi) -> None:
    net = held_net(model, block, hyper)
    _run(model, net, state, counts(net, state), hyper, nwk, nk, seed, frozen_phi, False)


def completion(model, block, hyper, schedule, seed, partition) -> np.ndarray:
    """Document completion (:func:`inference.gibbs.heldout.heldout_loglik`'s split and chain; the block's sweep
    samples its own word vectors), every scored token's rows :func:`.whole_words.scored_rows`."""
    n_docs = float(block.n_docs)
    block, scored = heldout.completion_blocks(model, block, schedule, seed)
    if block.n_tokens == 0 or scored.n_tokens == 0:
        return np.array([0.0, 0.0, n_docs])
    seg = np.repeat(np.arange(scored.n_segments), np.diff(scored.seg_ptr))
    phi_vk = np.zeros((model.vocab_size, model.num_topics))    # not read: the word side is in the network
    prob, taken = np.zeros(scored.n_tokens), 0
    for state in heldout.frozen_chain(model, block, hyper, phi_vk, schedule, seed, partition):
        nu = np.ascontiguousarray(model.segment_topic(block, state, hyper), dtype=np.float64)
        obs_cnt = counts(whole_words.frozen_net(model, block, hyper), state)
        prob += (nu[seg] * whole_words.scored_rows(model, block, state, scored, hyper, obs_cnt)).sum(axis=1)
        taken += 1
    return np.array([float(np.log(prob / taken).sum()), float(scored.n_tokens), n_docs])


def segment_rows(model, net, block, means: np.ndarray) -> np.ndarray:
    """(S, K) every segment's topic vector's posterior mean (its first token's draw); an empty segment: its
    document's row (the split model's :meth:`PdpNetwork.segment_topic`)."""
    K, S = model.num_topics, block.n_segments
    out = np.full((S, K), 1.0 / K)
    lengths = np.diff(block.seg_ptr)
    has = lengths > 0
    inst = net.topic_inst[block.seg_ptr[:-1][has]]
    out[has] = means[net.off[inst][:, None] + np.arange(K)]
    doc = model._doc_rows(block, out, lengths)
    out[~has] = doc[block.doc_of_segment()[~has]]
    return out


def document_start(model, doc, hyper) -> tuple:
    """A test document's topic side from the trained shared vectors (``start`` of
    :func:`drivers.models.pdp_network.left_to_right_scores.network_scores`)."""
    net = model._compiled(doc, hyper)
    s, _, idx, c_tr, t_tr = trained_start(model._trained_whole, net)
    cnt = rebuild_counts(net, np.zeros(0, np.int64), np.zeros_like(s), word_side=False)
    cnt["tc"][idx], cnt["tp"][idx] = c_tr, t_tr
    node = np.repeat(np.arange(net.num_nodes), net.dim)
    cnt["TC"] = np.bincount(node, cnt["tc"], net.num_nodes).astype(np.int64)
    cnt["TP"] = np.bincount(node, cnt["tp"], net.num_nodes).astype(np.int64)
    cnt["Se"] = np.add.reduceat(s, net.eoff[:-1]) if len(net.par_node) else cnt["Se"]
    cnt["Se"][np.diff(net.eoff) == 0] = 0
    mask = shared_nodes(net) & (net.kind == KIND_PYP)
    cnt["own"] = (mask, np.zeros(net.num_cells, np.int64), np.zeros(net.num_cells, np.int64))
    avals, bvals = model._values(net, hyper)
    return net, cnt, avals, bvals, [net.spec.params[n].sample for n in net.a_names]


def word_hooks(model, hyper) -> dict:
    """The word side's arguments of ``network_scores`` (``words_of``, ``rows_of``, ``protocol``): none (the
    topics' posterior means) unless :attr:`model.word_predictive` (:mod:`.whole_words`)."""
    protocol = "; whole-network mode: the trained shared topic vectors"
    if not model.word_predictive:
        return {"protocol": protocol}
    spec = parse_network(hyper["network"])
    shape = whole_words.own_shape(spec)
    if shape == "one":
        return {"words_of": lambda doc, net: whole_words.document_words(model, doc, hyper, net),
                "protocol": protocol + "; the word side: " + whole_words.BURST_PROTOCOL}
    if shape in ("several", "chain", "graph"):
        how = {"several": " (mixed by rho)", "chain": " (a chain of own vectors, seated level by level)",
               "graph": " (own vectors over own and shared parents mixed by rho, seated level by level)"}[shape]
        said = whole_words.BURST_PROTOCOL + how
        if spec.nodes[spec.word.node].kind == "dirichlet":      # an own root: no shared parent (whole_words.own_words)
            said = whole_words.URN_PROTOCOL
        return {"words_of": lambda doc, net: whole_words.own_words(model, doc, hyper, net),
                "word_kernel": own_word_particles, "protocol": protocol + "; the word side: " + said}
    own = whole_words.word_families(spec)[1]
    return {"rows_of": lambda doc: whole_words.prior_rows(model, doc, hyper),
            "protocol": protocol + "; the word side: " + whole_words.FROZEN_PROTOCOL
            + (whole_words.OWN_NOT_CARRIED if own else "")}


def left_to_right(model, block, hyper, phi_vk, settings):
    """Every test document from the trained shared vectors (module docstring;
    :func:`drivers.models.pdp_network.left_to_right_scores.network_scores`)."""
    return left_to_right_scores.network_scores(block, phi_vk, settings, lambda doc: document_start(model, doc, hyper),
                                               **word_hooks(model, hyper))
