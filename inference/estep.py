"""The per-document variational E-step of LDA (the Mr. LDA mapper's inner loop, Alg. 1).

For every document, alternate the phi update (thesis Alg. 1 line 7, with
E_q[log beta] in place of log E_q[beta], see ``docs`` below) and the gamma update
(Alg. 1 lines 9-11, with the term-count weight w_v and sigma reset each pass)
until the mean absolute change of gamma falls below ``tol`` or ``max_iter`` passes
have run. phi is never stored: with exp E[log theta] and exp E[log beta] its
normaliser ``phinorm_v = sum_k exp(E[log theta_k] + E[log beta_kv])`` carries all
that the gamma update, the lambda statistics and the ELBO need (Lee-Seung form,
as in Hoffman et al. 2010 and Spark MLlib).

Layout for speed: a document's rows of exp E[log beta] are copied once (before
its warm and cold fits) into a contiguous n x K block and its transpose, so the
two products of every pass, phinorm = B theta and sigma = B^T (w / phinorm), are
loops of axpys over contiguous memory that LLVM vectorises without reordering
any sum (no ``fastmath``: the same bits on every machine of a cluster).

Choice of E_q[beta]: the thesis' Alg. 1 uses the normalised lambda; we use
exp(Psi(lambda) - Psi(sum lambda)) (Blei et al. 2003), which makes the ELBO of
eq (3.4) exact and therefore provably non-decreasing under the EM updates.
"""
from __future__ import annotations

import math

import numba
import numpy as np

from inference.special import dirichlet_expectation_1d, exp_digamma

PHINORM_FLOOR = 1e-100
# a cold-start fit replaces the warm one only if it raises the document's ELBO by more than this (nats):
# both fits stop at the same tolerance, so smaller differences are noise, not a better optimum
RESTART_MARGIN = 1e-2


@numba.njit(cache=True, nogil=True, error_model="numpy")
def initial_gamma(indptr: np.ndarray, counts: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """gamma_dk = alpha_k + N_d / K (Mr. LDA's deterministic initialisation)."""
    n_docs = indptr.shape[0] - 1
    n_topics = alpha.shape[0]
    gamma = np.empty((n_docs, n_topics))
    for d in range(n_docs):
        n_d = 0.0
        for j in range(indptr[d], indptr[d + 1]):
            n_d += counts[j]
        for k in range(n_topics):
            gamma[d, k] = alpha[k] + n_d / n_topics
    return gamma


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _gather_rows(local_terms, start, end, exp_elogbeta, rows, rows_t):
    """Copy the document's rows of exp E[log beta] into ``rows`` (n x K) and ``rows_t`` (K x n)."""
    n_topics = exp_elogbeta.shape[1]
    for j in range(end - start):
        u = local_terms[start + j]
        for k in range(n_topics):
            v = exp_elogbeta[u, k]
            rows[j, k] = v
            rows_t[k, j] = v


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _phinorm(rows_t, n, weights, out):
    """out_j = sum_k weights_k rows_t[k, j] + floor: a sum of axpys over the document (vectorised over j)."""
    for j in range(n):
        out[j] = 0.0
    for k in range(rows_t.shape[0]):
        wk = weights[k]
        for j in range(n):
            out[j] += wk * rows_t[k, j]
    for j in range(n):
        out[j] += PHINORM_FLOOR


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _fit_gamma(rows, rows_t, counts, start, n, alpha, g, tol, max_iter,
               elogtheta, exp_elogtheta, scratch, ratio):
    """Alternate phi and gamma for one document until mean |delta gamma| < tol; returns passes.

    The passes weight topics by exp(Psi(gamma_k)), which is exp(E[log theta_k]) up
    to the factor exp(Psi(sum gamma)) that the gamma update cancels; on return
    ``elogtheta`` and ``exp_elogtheta`` hold the exact E[log theta] of the final gamma.
    """
    n_topics = alpha.shape[0]
    iters = 0
    if n > 0:
        for it in range(max_iter):
            iters += 1
            exp_digamma(g, elogtheta, exp_elogtheta)
            _phinorm(rows_t, n, exp_elogtheta, ratio)
            for j in range(n):
                ratio[j] = counts[start + j] / ratio[j]
            for k in range(n_topics):
                scratch[k] = 0.0
            for j in range(n):
                r = ratio[j]
                for k in range(n_topics):
                    scratch[k] += r * rows[j, k]
            change = 0.0
            for k in range(n_topics):
                val = alpha[k] + exp_elogtheta[k] * scratch[k]
                change += abs(val - g[k])
                g[k] = val
            if change / n_topics < tol:
                break
    dirichlet_expectation_1d(g, elogtheta)
    for k in range(n_topics):
        exp_elogtheta[k] = math.exp(elogtheta[k])
    return iters


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _document_terms(rows_t, counts, start, n, g, elogtheta, exp_elogtheta, phinorm):
    """ELBO terms of one document at (phi implied by gamma, gamma), without the alpha parts.

    Fills ``phinorm`` and returns sum_v w_v log phinorm_v - sum_k gamma_k E[log theta_k] - log B(gamma).
    """
    n_topics = g.shape[0]
    _phinorm(rows_t, n, exp_elogtheta, phinorm)
    loglik = 0.0
    for j in range(n):
        loglik += counts[start + j] * math.log(phinorm[j])
    gamma_sum = 0.0
    theta_term = 0.0
    for k in range(n_topics):
        gamma_sum += g[k]
        theta_term += math.lgamma(g[k]) - g[k] * elogtheta[k]
    return loglik + theta_term - math.lgamma(gamma_sum)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def estep_documents(indptr, local_terms, counts, gamma, exp_elogbeta, alpha, tol, max_iter,
                    want_stats, restart=False, restart_stride=1, restart_offset=0, warm_max_iter=-1):
    """Variational E-step over a block of documents.

    Parameters
    ----------
    indptr, local_terms, counts : the block in CSR form (see ``DocBlock``).
    gamma : (D, K) float64, updated in place; its input is the warm start.
    exp_elogbeta : (U, K) exp(E_q[log beta_kv]) for the block's local terms.
    alpha : (K,) document-topic Dirichlet prior.
    want_stats : accumulate lambda statistics (False for inference / held-out).
    restart : also fit every document from the cold start alpha + N_d/K and keep
        whichever of the two fits has the higher ELBO. Warm starts alone can lock
        documents into the topics of the first iterations; keeping the better of
        the two never lowers the ELBO, so EM stays monotone.
    restart_stride, restart_offset : with ``restart``, refit only documents d with
        d % stride == offset (a rotating slice, to spread the cost over iterations).
    warm_max_iter : passes of the warm fit (-1: ``max_iter``). 0 skips it: the cold
        fit then competes with the warm start itself, which still keeps EM monotone
        (used when the warm start comes from a rough initialisation E-step).

    Returns
    -------
    sstats : (U, K) sum_d w_dv phi_dvk, the lambda sufficient statistics (zeros if not wanted).
    alpha_stats : (K,) sum_d Psi(gamma_dk) - Psi(sum_l gamma_dl), eq (3.3) gamma-tokens.
    doc_elbo : (D,) per-document ELBO terms that need neither alpha nor lambda:
        sum_v w_v log phinorm_v - sum_k gamma_k E[log theta_k] - log B(gamma)
        (the driver adds the alpha part from ``alpha_stats``).
    inner_iters : (D,) number of phi/gamma passes per document.
    restarts : (2,) documents whose cold-start fit was kept, and documents refitted.
    """
    n_docs = indptr.shape[0] - 1
    n_topics = alpha.shape[0]
    n_local = exp_elogbeta.shape[0]
    sstats = np.zeros((n_local if want_stats else 1, n_topics))
    alpha_stats = np.zeros(n_topics)
    doc_elbo = np.zeros(n_docs)
    inner_iters = np.zeros(n_docs, dtype=np.int64)
    elogtheta = np.empty(n_topics)
    exp_elogtheta = np.empty(n_topics)
    cold = np.empty(n_topics)
    cold_elog = np.empty(n_topics)
    cold_exp = np.empty(n_topics)
    scratch = np.empty(n_topics)
    max_len = 0
    for d in range(n_docs):
        max_len = max(max_len, indptr[d + 1] - indptr[d])
    phinorm = np.empty(max_len)
    ratio = np.empty(max_len)
    rows = np.empty((max_len, n_topics))
    rows_t = np.empty((n_topics, max_len))
    restarts = np.zeros(2, dtype=np.int64)

    for d in range(n_docs):
        start = indptr[d]
        end = indptr[d + 1]
        n = end - start
        g = gamma[d]
        _gather_rows(local_terms, start, end, exp_elogbeta, rows, rows_t)
        iters = _fit_gamma(rows, rows_t, counts, start, n, alpha, g, tol,
                           max_iter if warm_max_iter < 0 else warm_max_iter,
                           elogtheta, exp_elogtheta, scratch, ratio)
        terms = _document_terms(rows_t, counts, start, n, g, elogtheta, exp_elogtheta, phinorm)
        if restart and end > start and d % restart_stride == restart_offset:
            restarts[1] += 1
            n_d = 0.0
            for j in range(start, end):
                n_d += counts[j]
            for k in range(n_topics):
                cold[k] = alpha[k] + n_d / n_topics
            iters += _fit_gamma(rows, rows_t, counts, start, n, alpha, cold, tol, max_iter,
                                cold_elog, cold_exp, scratch, ratio)
            cold_terms = _document_terms(rows_t, counts, start, n, cold, cold_elog, cold_exp, phinorm)
            gain = cold_terms - terms
            for k in range(n_topics):
                gain += alpha[k] * (cold_elog[k] - elogtheta[k])
            if gain > RESTART_MARGIN:
                restarts[0] += 1
                terms = cold_terms
                for k in range(n_topics):
                    g[k] = cold[k]
                    elogtheta[k] = cold_elog[k]
                    exp_elogtheta[k] = cold_exp[k]
            else:  # phinorm must describe the kept fit
                _document_terms(rows_t, counts, start, n, g, elogtheta, exp_elogtheta, phinorm)
        inner_iters[d] = iters
        doc_elbo[d] = terms
        for k in range(n_topics):
            alpha_stats[k] += elogtheta[k]
        if want_stats:
            for j in range(start, end):
                u = local_terms[j]
                w = counts[j] / phinorm[j - start]
                for k in range(n_topics):
                    sstats[u, k] += w * exp_elogtheta[k]
    if want_stats:
        # sum_d w_dv phi_dvk = exp E[log beta_kv] * sum_d w_dv exp E[log theta_dk] / phinorm_dv
        for u in range(n_local):
            for k in range(n_topics):
                sstats[u, k] *= exp_elogbeta[u, k]
    return sstats, alpha_stats, doc_elbo, inner_iters, restarts


def compile_kernels() -> None:
    """Compile (or load from numba's cache) the E-step on a tiny input.

    The driver calls this before the first Spark job so executors on the same
    machine load the cached machine code instead of compiling it concurrently.
    """
    indptr = np.array([0, 2], dtype=np.int64)
    terms = np.array([0, 1], dtype=np.int32)
    counts = np.array([1.0, 2.0])
    alpha = np.full(2, 0.5)
    gamma = initial_gamma(indptr, counts, alpha)
    estep_documents(indptr, terms, counts, gamma, np.full((2, 2), 0.5), alpha, 1e-3, 5, True, True)
