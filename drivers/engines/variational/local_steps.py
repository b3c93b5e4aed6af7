"""The variational engine's local steps, what a mapper does with its partition: the E-step of Alg. 1 warm-started
from the partition's gamma (``EStep``), or the hybrid variational-MCMC step (thesis §4.2) warm-started from its
topic assignments (``HybridStep``); each plans an iteration on the driver and runs on the executors."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from drivers.engines.variational.settings import EMSettings
from inference.constraints import AT_LEAST_0, AT_LEAST_1, validate
from inference.elbo import alpha_terms
from inference.mapper import EStepSettings, doc_topic_counts, hybrid_block, map_block


class EStep:
    """The default local step: the variational E-step of Alg. 1 (:func:`inference.mapper.map_block`), warm-started
    from the partition's gamma of the previous iteration, with the E-step schedule of :meth:`EMSettings.estep_at`."""

    name = "E-step"
    mean_weights = False     # the mappers get E_q[log beta] (eq 3.4)
    gamma_needs_alpha = False   # gamma is the state: a mapper of the last iteration has the model's gamma

    def __init__(self, settings: EMSettings):
        self.settings = settings

    def plan(self, iteration: int, trace: list) -> EStepSettings:
        """The driver's plan of one iteration (shipped to the tasks)."""
        return self.settings.estep_at(iteration, trace)

    def run(self, partition: int, block, state, log_weights: np.ndarray, alpha: np.ndarray, plan: EStepSettings,
            topic_groups):
        """``(new state, topic records, statistics vector)`` of one partition (no Spark); ``log_weights`` are
        the (U, K) E_q[log beta] of the block's vocabulary."""
        return map_block(partition, block, state, log_weights, alpha, plan, topic_groups)

    objective_name = "elbo"

    def objective(self, doc_terms: float, alpha: np.ndarray, alpha_stats: np.ndarray, n_docs: float) -> float:
        """The documents' part of the iteration's objective: the per-document ELBO terms and the alpha terms
        (eq 3.4); the engine adds the topics' prior and entropy terms."""
        return doc_terms + alpha_terms(alpha, alpha_stats, n_docs)

    def gamma(self, block, state, alpha: np.ndarray) -> np.ndarray:
        """(D, K) variational Dirichlet parameters of the block's documents from the partition's state."""
        return state


@dataclass(frozen=True)
class HybridPlan:
    iteration: int
    seed: int
    burn_in: int
    samples: int
    average_digammas: bool = False    # the alpha statistics from the samples' mean of Psi (else Psi of the mean)


class HybridStep:
    """The hybrid variational-MCMC local step (thesis §4.2, :func:`inference.mapper.hybrid_block`): theta
    marginalised, each document's topic assignments Gibbs-sampled given E_q[log beta] (4.9), ``burn_in`` sweeps
    then ``samples`` kept sweeps averaged into sparse statistics (4.10); the partition's state is every token's
    topic (the next iteration's warm start). Draws are seeded by (seed, iteration, document)."""

    name = "hybrid sampling"
    objective_name = "log_joint"
    gamma_needs_alpha = True    # gamma = alpha + counts, with the alpha of the last M-step (after the mappers)

    def __init__(self, seed: int, burn_in: int = 5, samples: int = 5, mean_weights: bool = False,
                 alpha_warmup: int | None = None):
        validate({"hybrid_burn_in": burn_in, "hybrid_samples": samples, "hybrid_alpha_warmup": alpha_warmup},
                 {"hybrid_burn_in": AT_LEAST_0, "hybrid_samples": AT_LEAST_1,
                  "hybrid_alpha_warmup": AT_LEAST_0})    # (the flag's -1 arrives as None)
        self.seed, self.burn_in, self.samples = int(seed), int(burn_in), int(samples)
        #: EM iterations whose alpha statistics use Psi of the kept samples' mean counts (a smoothing that helps
        #: while the topics form) before the samples' mean of Psi (unbiased: no upward drift of alpha); None:
        #: the mean counts throughout
        self.alpha_warmup = alpha_warmup
        #: the word factor of (4.9): exp(E_q[log beta_kw]) (the thesis), or E_q[beta_kw] (a collapsed sampler's
        #: (n_kw + eta) / (n_k + V eta) with the counts of the last iteration)
        self.mean_weights = bool(mean_weights)

    def plan(self, iteration: int, trace: list) -> HybridPlan:
        average = self.alpha_warmup is not None and iteration > self.alpha_warmup
        return HybridPlan(iteration, self.seed, self.burn_in, self.samples, average)

    def run(self, partition: int, block, state, log_weights: np.ndarray, alpha: np.ndarray, plan: HybridPlan,
            topic_groups):
        return hybrid_block(partition, block, state, log_weights, alpha, plan.seed, plan.iteration, plan.burn_in,
                            plan.samples, topic_groups, average_digammas=plan.average_digammas)

    def objective(self, doc_terms: float, alpha: np.ndarray, alpha_stats: np.ndarray, n_docs: float) -> float:
        """The kept samples' mean log p(z_d | alpha) + sum_n E_q[log beta_{z_dn w_dn}] summed over documents (the
        unnormalised log of (4.8)): a sampled quantity, so it wanders by its noise once EM has converged."""
        return doc_terms

    def gamma(self, block, state, alpha: np.ndarray) -> np.ndarray:
        """alpha + the document-topic counts of the last sample (q(theta_d) given the state)."""
        return alpha[None, :] + doc_topic_counts(block, state, alpha.shape[0])
