"""Left-to-right evaluation of the cluster-based topic model (:mod:`inference.left_to_right`; Wallach et al. 2009,
Alg. 3, one state per particle).

With the training counts frozen, a test document is generated in order: its cluster c by the Chinese restaurant
process (N_c / (D + zeta), a new one zeta / (D + zeta)), then every token's topic by the predictive (5.7) of its
earlier topics (added to the cluster's counts with the path rule as they come) and its word by phi. A particle
carries (c, z_<n): before token n (``resample``) it redraws c from its exact conditional given z_<n, P(c | z_<n)
proportional to N_c P(z_<n | c) (the cluster step (5.31)-(5.32) with the document's prefix); then
p_n = sum_t P(z_n = t | c, z_<n) phi_t(w_n), and z_n is drawn from the normalised terms. A model trained in one
cluster throughout (``--one-cluster-iterations`` at least the iterations: the thesis' LDA) has no new cluster: its
test documents are in its one cluster. With resampling the particle's earlier topics are revisited too, as LDA's
are (Alg. 3): under a path assumption the exact conditional of one of them involves every later token (the counts
are not exchangeable), so each is a Metropolis-Hastings move whose target is the prefix's exact posterior
(:mod:`drivers.models.cluster_lda.revisit`, O(L^2) per particle as LDA's; the thesis' "as if last" step alone
would leave the estimator biased). Without revisiting (as
before session 17) the left-to-right product of the particles' means is not consistent (each factor tends to
its mean under the unweighted proposal): on the Python pages at K = 50 it over-charged the thesis' LDA by 0.08
bits per word against LDA's estimator on the same model. The particles' mean product is an unbiased estimate of
p(w_d) with resampling on (annealed importance sampling over the prefixes, every move exact or MH) or off
(sequential importance sampling, c from the prior); tested against the enumerated p(w_d).
"""
from __future__ import annotations

import math

import numba
import numpy as np

from drivers.models.cluster_lda import one_cluster
from drivers.models.cluster_lda.kernels import cluster_topic, log_topics_given_cluster, path_add, path_remove
from drivers.models.cluster_lda.revisit import CAPS, draw, revisit, workspace
from inference.left_to_right import COLUMNS, DocumentEstimate, known_tokens

PROTOCOL = ("particles: the document's cluster and topics; before each token the cluster is redrawn from its exact "
            "conditional given the earlier topics (the cluster step with the prefix; with resampling), "
            "then (with resampling) its earlier topics revisited by Metropolis-Hastings moves on their exact posterior; "
            "p(z_n = t | c, z_<n) by (5.7) with the training counts frozen")


@numba.njit(cache=True)
def cluster_lda_particles(scaled, ctk, ck, sizes, kt, ktot, zeta, alpha, alpha1, alpha0, maximal, resample, seeds,
                          may_open, work, caps, fast=True):
    """(R, n) p_n^(r) of the rows ``scaled`` (n x T, phi_t(w_n) / max_t phi_t(w_n)) against the frozen levels
    (``ctk`` with a spare empty row C for a new cluster, weighed zeta unless ``may_open`` is false: a model of one
    cluster by construction; restored on return); see the module's docstring. ``work[0]`` accumulates the token
    visits, ``caps`` the revisits' schedules (:mod:`drivers.models.cluster_lda.revisit`, ``CAPS``; ``fast`` false:
    its O(L^3) reference revisits)."""
    n, T = scaled.shape
    C = ctk.shape[0] - 1
    R = seeds.shape[0]
    out = np.empty((R, n))
    z = np.zeros(n, dtype=np.int32)
    ndk = np.zeros(T, dtype=np.int64)
    scratch = np.zeros(T, dtype=np.int64)
    ws = workspace(T)
    weights = np.empty(max(T, C + 1))
    logw = np.empty(C + 1)
    for r in range(R):
        np.random.seed(seeds[r])
        for k in range(C + 1):
            weights[k] = sizes[k] if k < C else (zeta if may_open else 0.0)
        c = draw(weights, C + 1)
        for i in range(n):
            if resample and i > 0:
                for m in range(i - 1, -1, -1):          # the prefix leaves its cluster ...
                    path_remove(c, z[m], ndk, ctk, ck, kt, ktot, maximal)
                best = -np.inf
                for k in range(C + 1):                  # ... the cluster step (5.31) ...
                    logw[k] = -np.inf
                    if (k == C and may_open) or (k < C and sizes[k] > 0):
                        logw[k] = math.log(zeta if k == C else sizes[k]) + log_topics_given_cluster(
                            z, 0, i, k, scratch, ctk, ck, kt, ktot, alpha, alpha1, alpha0, maximal)
                        best = max(best, logw[k])
                for k in range(C + 1):
                    weights[k] = math.exp(logw[k] - best)
                work[0] += (C + 3) * i
                c = draw(weights, C + 1)
                revisit(scaled, z, i, c, ws, ctk, ck, kt, ktot, alpha, alpha1, alpha0, maximal, caps,
                        fast, work)                     # ... the earlier topics revisited given c ...
                for m in range(i):                      # ... and the prefix joins the cluster drawn
                    path_add(c, z[m], ndk, ctk, ck, kt, ktot, maximal)
            total = 0.0
            for t in range(T):
                weights[t] = scaled[i, t] * (ndk[t] + alpha * cluster_topic(c, t, ctk, ck, kt, ktot, alpha1, alpha0, T))
                total += weights[t]
            out[r, i] = total / (i + alpha)
            z[i] = draw(weights, T)
            path_add(c, z[i], ndk, ctk, ck, kt, ktot, maximal)
        for m in range(n - 1, -1, -1):
            path_remove(c, z[m], ndk, ctk, ck, kt, ktot, maximal)
    return out


def cluster_lda_scores(model, block, hyper: dict, phi_vk: np.ndarray, settings) -> np.ndarray:
    """(D, 4) ``[log p(w_d) by left-to-right, by importance sampling, scored tokens, skipped tokens]`` of every
    document of ``block`` under the trained ``model`` (its frozen levels) with the topics ``phi_vk`` (V x T)."""
    phi_vk = np.ascontiguousarray(phi_vk, dtype=np.float64)
    ctk, ck, sizes, kt, ktot = model.frozen_levels()
    may_open = not one_cluster.never_left(hyper)
    alphas = model.concentrations(one_cluster.scoring_hyper(hyper))
    ptr = block.token_ptr()
    out = np.zeros((block.n_docs, COLUMNS))
    for d in range(block.n_docs):
        doc = np.asarray(block.words[ptr[d]:ptr[d + 1]])
        known = known_tokens(doc, phi_vk.shape[0])
        rows = phi_vk[doc[known]]
        seeds = settings.particle_seeds(block.doc_ids[d])
        if rows.shape[0] == 0:
            out[d] = (0.0, 0.0, 0, (~known).sum())
            continue
        scale = rows.max(axis=1)
        probs = cluster_lda_particles(np.ascontiguousarray(rows / scale[:, None]), ctk, ck, sizes, kt, ktot,
                                      float(hyper["zeta"]), *alphas, model.maximal, bool(settings.resample), seeds,
                                      may_open, np.zeros(1, dtype=np.int64), CAPS)
        est = DocumentEstimate.of_particles(probs, scale)
        out[d] = (est.log_left_to_right, est.log_importance, known.sum(), (~known).sum())
    return out
