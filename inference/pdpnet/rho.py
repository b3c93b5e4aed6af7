"""A Pitman-Yor vector's mixing weight rho_e of parent edge e in the kernels' terms: (gamma_e + S_e)/(sum gamma + T)
with rho ~ Dirichlet(gamma) integrated out (E9), or fixed weights rho_e = gamma_e (a ``"weights": "uniform"`` node
with n > 1 parents: gamma_e = 1/n, and gamma_sum = -1 marks it, :func:`inference.pdpnet.compile._fixed_weights`).
Split in numerator and denominator so that the integrated-out case keeps its operations (the same floats)."""
from __future__ import annotations

from inference.gibbs.common import token_kernel


@token_kernel
def rho_num(g, se, gs):
    """The numerator of an edge's rho, gamma_e + S_e (rho ~ Dirichlet(gamma) integrated out, E9), or gamma_e for
    fixed weights (the vector's gamma_sum < 0: :func:`inference.pdpnet.compile._fixed_weights`)."""
    return g if gs < 0.0 else g + se


@token_kernel
def rho_den(gs, T):
    """The denominator of an edge's rho, sum gamma + T, or 1 for fixed weights (:func:`rho_num`)."""
    return 1.0 if gs < 0.0 else gs + T
