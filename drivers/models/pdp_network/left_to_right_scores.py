"""``evaluate --method left-to-right`` for ``pdp-network`` (issue 28, 3): every test document scored on its own,
its particles carrying the network's whole state (:mod:`inference.pdpnet.left_to_right`: exact in the model)."""
from __future__ import annotations

import numpy as np

from inference.left_to_right import COLUMNS, DocumentEstimate, LeftToRightScores, known_block
from inference.pdpnet import kernels
from inference.pdpnet.bigram_left_to_right import bigram_particles
from inference.pdpnet.left_to_right import network_particles
from inference.pdpnet.ratio_path import open_exp_table
from inference.pdpnet.sampler import StirlingStack
from inference.pdpnet.sweep import ratio_tables

PROTOCOL = ("particles: the document's network state (z, table counts t, attributions s) moved by the network "
            "sampler's exact moves; p(z_n = k | state) the Chinese restaurant predictive of the token's topic vector")


def network_scores(block, phi_vk: np.ndarray, settings, start, words_of=None, protocol="",
                   rows_of=None, word_kernel=bigram_particles) -> LeftToRightScores:
    """The hook's scores (:meth:`inference.gibbs.model.GibbsModel.left_to_right`) of a block; ``start(doc)``: a
    one-document block's ``(compiled network, counts it starts from, discounts, concentrations, which discounts
    are sampled)`` (:meth:`drivers.models.pdp_network.PdpNetwork.test_document_start`); ``words_of(doc, net)``: a
    bigram-topic word side's arguments of :func:`bigram_particles` (each particle's earlier tokens in its counts;
    :meth:`drivers.models.pdp_network.words_bigram.BigramArrays.document_words`), else the tokens' rows of ``phi_vk`` or
    ``rows_of(doc)`` ((N, K) per token: a word side indexed by [topic, column], :mod:`drivers.models.pdp_network.words_column`);
    ``protocol``: added to the scores' protocol; ``word_kernel``: the kernel ``words_of``'s arguments go to
    (:func:`inference.pdpnet.own_word_particles.own_word_particles`: own word vectors over several parents, or
    a chain of them)."""
    phi_vk = np.ascontiguousarray(phi_vk, dtype=np.float64)
    known, skipped = known_block(block, phi_vk.shape[0])
    out = np.zeros((block.n_docs, COLUMNS))
    for d in range(known.n_docs):
        doc = known.documents(np.arange(known.n_docs) == d)
        n_tokens = doc.n_tokens
        out[d] = (0.0, 0.0, n_tokens, skipped[d])
        if n_tokens == 0:
            continue
        est = DocumentEstimate.of_particles(*document_particles(doc, phi_vk, settings, start, words_of, rows_of,
                                                                word_kernel))
        out[d, :2] = (est.log_left_to_right, est.log_importance)
    return LeftToRightScores(out, PROTOCOL + protocol)


def document_particles(doc, phi_vk: np.ndarray, settings, start, words_of=None, rows_of=None,
                       word_kernel=bigram_particles) -> tuple:
    """(R, N) every particle's p_n of a one-document block's tokens (scaled) and the (N,) scales
    (:func:`network_scores`' arguments)."""
    n_tokens = doc.n_tokens
    net, cnt, avals, bvals, sampled = start(doc)
    stirling = StirlingStack(avals, sampled=sampled)
    words = None if words_of is None else words_of(doc, net)
    # the particles read Stirling numbers at the document's own vectors only, whose cells hold at most its
    # tokens (a shared vector's customers are seated by the restaurant: inference.pdpnet.doc_restaurant)
    stirling.ensure(n_tokens, n_tokens)
    shared, own_c, own_t = cnt.get("own", (np.zeros(net.num_nodes, np.bool_), cnt["tc"], cnt["tp"]))
    RJ, RO = ratio_tables(stirling.L3)
    anc_ptr, anc = kernels.ancestor_lists(net.par_ptr, net.par_node)
    topic_side = (net.topic_inst, anc_ptr, anc, net.kind, net.dim, net.off, net.alpha, net.a_of, net.b_of,
                  net.par_ptr, net.par_node, net.par_gamma, net.gamma_sum, avals, bvals, RJ, RO,
                  open_exp_table(stirling.L3), cnt["n"], cnt["tc"], cnt["tp"], cnt["Nn"], cnt["TC"], cnt["TP"],
                  np.zeros(int(net.eoff[-1]), np.int64), cnt["Se"], net.eoff, shared, own_c, own_t)
    seeds = settings.particle_seeds(doc.doc_ids[0])
    if words is not None:
        return word_kernel(seeds, bool(settings.resample), *words, *topic_side), np.ones(n_tokens)
    rows = phi_vk[doc.words] if rows_of is None else rows_of(doc)
    scale = rows.max(axis=1)
    if not np.all(scale > 0):
        raise ValueError("every token needs a positive probability under some topic")
    return network_particles(seeds, bool(settings.resample), np.ascontiguousarray(rows / scale[:, None]),
                             *topic_side), scale
