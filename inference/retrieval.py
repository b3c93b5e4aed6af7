"""Cross-language document retrieval with topic proportions (Mimno et al. 2009, §5 of the polylingual paper).

For held-out aligned tuples, theta is inferred from each language alone; a
document in language A should find its aligned partner among all documents in
language B as the nearest by Hellinger (or Jensen-Shannon) divergence. Pure numpy.
"""
from __future__ import annotations

import numpy as np

from inference.distances import hellinger_matrix


def jensen_shannon_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """JS(a_i, b_j) in nats for every pair of rows (quadratic memory in the rows: for held-out sets)."""
    a, b = a[:, None, :], b[None, :, :]
    m = 0.5 * (a + b)
    with np.errstate(divide="ignore", invalid="ignore"):
        ka = np.where(a > 0, a * np.log(a / m), 0.0).sum(-1)
        kb = np.where(b > 0, b * np.log(b / m), 0.0).sum(-1)
    return 0.5 * (ka + kb)


def retrieval_scores(theta_a: np.ndarray, theta_b: np.ndarray, metric: str = "hellinger") -> dict:
    """Row i of ``theta_a`` and row i of ``theta_b`` are aligned; score retrieval of B from A.

    Returns precision at 1 (fraction of rows whose nearest row of B is its partner;
    ties count as misses), the mean rank of the partner (1 = best), the mean
    divergence of aligned pairs and of all pairs, and chance precision 1/n.
    """
    theta_a = np.asarray(theta_a, dtype=np.float64)
    theta_b = np.asarray(theta_b, dtype=np.float64)
    if theta_a.shape != theta_b.shape or theta_a.ndim != 2 or theta_a.shape[0] < 2:
        raise ValueError(f"need two aligned (n x K) matrices with n >= 2, got {theta_a.shape} and {theta_b.shape}")
    d = hellinger_matrix(theta_a, theta_b) if metric == "hellinger" else jensen_shannon_matrix(theta_a, theta_b)
    n = d.shape[0]
    own = np.diag(d)
    closer = (d < own[:, None]).sum(axis=1)               # documents strictly closer than the partner
    ties = (d == own[:, None]).sum(axis=1) - 1
    return {"metric": metric, "documents": int(n),
            "precision_at_1": float(np.mean((closer == 0) & (ties == 0))),
            "mean_rank": float(np.mean(closer + 1)),
            "mean_reciprocal_rank": float(np.mean(1.0 / (closer + 1))),
            "mean_aligned_divergence": float(own.mean()),
            "mean_divergence_all_pairs": float(d.mean()),
            "chance_precision": 1.0 / n}


def lexicon_induction(vectors_a: np.ndarray, vectors_b: np.ndarray, pairs) -> dict:
    """Bilingual lexicon induction (Vulić et al. 2011): every word of language A (row of ``vectors_a``, its topic
    vector) ranks every word of language B by cosine similarity; ``pairs`` = (row in A, row in B) translations
    held out of the model. Returns accuracy at 1 and the mean reciprocal rank of the translation (a query with
    several translations counts its best-ranked one), and the number of queries."""
    a = np.asarray(vectors_a, dtype=np.float64)
    b = np.asarray(vectors_b, dtype=np.float64)
    a = a / np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-300)
    b = b / np.maximum(np.linalg.norm(b, axis=1, keepdims=True), 1e-300)
    answers: dict[int, set] = {}
    for i, j in pairs:
        answers.setdefault(int(i), set()).add(int(j))
    if not answers:
        return {"queries": 0, "accuracy_at_1": float("nan"), "mean_reciprocal_rank": float("nan")}
    queries = np.array(sorted(answers))
    similarity = a[queries] @ b.T
    ranks = []
    for row, query in zip(similarity, queries):
        best = max(row[j] for j in answers[int(query)])
        ranks.append(1 + int(np.sum(row > best)))
    ranks = np.asarray(ranks)
    return {"queries": int(len(queries)), "accuracy_at_1": float(np.mean(ranks == 1)),
            "mean_reciprocal_rank": float(np.mean(1.0 / ranks))}
