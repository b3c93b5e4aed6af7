"""An ablation ladder between the fixed-vocabulary online LDA and the infinite-vocabulary model, in this process,
without Spark (issue 30): which of infvoc's three ingredients loses the topics' separation on a stream.

The rungs (the same minibatches, seeds, K, S, tau0, kappa, D and alpha^theta = 1/K; the stream tokenised and cut
as :mod:`infvoc_sweep` does, the closed vocabulary ``--vocab stream`` every word of the stream's parts or ``base``
the base quarter's):

* **A** online VB (Hoffman et al. 2010): Dirichlet lambda (K x V), the project's VB E-step
  (:func:`inference.estep.estep_documents`), lambda <- (1 - eps) lambda + eps (eta + D/|S| sstats);
* **B** the same with infvoc's hybrid local step (:func:`inference.hybrid.hybrid_documents` as
  :func:`inference.infvoc.local_step.sample_block` calls it: burn-in 5, 10 kept sweeps, seeds per (seed,
  minibatch, document)), the word factor exp(psi(lambda_kw) - psi(sum_w lambda_kw));
* **C** infvoc with a closed vocabulary: every topic's TOS holds the whole vocabulary from the start at the prior
  Beta(1, alpha^beta) (ordered by the words' stream frequency, ``--c-order``), T above V (no contraction), so no
  word ever enters (no expansion, G_0 only in the ranking score R);
* **D** infvoc as built (``--expand sampled`` and ``every``).

B vs A isolates the local step, C vs B the stick-breaking topics and their update (7.6)-(7.8), D vs C the growing
vocabulary. Scores as :mod:`infvoc_sweep` (NPMI of the 10 top words against the whole stream, its last batch and
the reference corpus; SVM and logistic balanced accuracy of theta inferred under the final model on the last
40%), plus the mean pairwise Jaccard overlap of the topics' 10 top words and the share of the inferred theta mass
held by the 2 largest topics. Every rung's theta is inferred over the closed vocabulary's words (D too), so the
classifiers see the same tokens.

    .venv/bin/python tests/bench/infvoc_ladder.py --corpus python-news-joined --topics 50 --minibatch-size 155 \
        --tau0 64 --kappa 0.6 --rungs A B C D-sampled D-every [--corpus-size 1398] [--seed 1]
"""
from __future__ import annotations

import itertools
import json
import time
from collections import Counter

import bench_common  # noqa: F401  (first: puts the project on sys.path)
import numpy as np
import pandas as pd
from bench_infvoc import classification_accuracy, npmi
from infvoc_corpora import CORPORA
from infvoc_sweep import infer_thetas, scoring_sets, stream_arguments, stream_parts, tokens_of
from scipy.special import digamma


def minibatches(parts, size: int):
    """The stream's minibatches as ``run_stream`` cuts them: each part in chunks of ``size``."""
    return [part[i:i + size] for part in parts for i in range(0, len(part), size)]


def vocab_block(chunk, lookup):
    """A DocBlock of (id, tokens) over the closed vocabulary ``lookup`` (word -> id), documents sorted by id as
    :class:`StringBlock` sorts them (so the hybrid draws use the same per-document seeds); out-of-vocabulary
    tokens dropped."""
    from inference.blocks import DocBlock

    docs = sorted(((str(d), [lookup[w] for w in t if w in lookup]) for d, t in chunk), key=lambda item: item[0])
    docs = [(d, t) for d, t in docs if t]
    indptr, ids, counts = [0], [], []
    for _, t in docs:
        u, n = np.unique(t, return_counts=True)
        ids.extend(u.tolist())
        counts.extend(n.tolist())
        indptr.append(len(ids))
    return DocBlock.from_csr(np.array([d for d, _ in docs], dtype=object), np.array(indptr, dtype=np.int64),
                             np.array(ids, dtype=np.int64), np.array(counts, dtype=np.float64))


def schedule(parts, kind: str, size: int, settings, base_iterations: int = 20, batch_iterations: int = 20):
    """The global steps [(documents, eps, scale, step id)]: ``stream``, one step per minibatch of ``size`` (infvoc's
    Algorithm 4: eps_i = (tau0 + i)^-kappa, scale D/|S|, D the corpus size or the documents seen); ``sweeps``, the
    bench's fixvoc: ``base_iterations`` whole steps over the base part (batch EM: eps 1, scale 1), then
    ``batch_iterations`` online steps over each whole batch (``refresh --mode online``: t counting the online steps,
    scale D/|batch|); ``passes``, infvoc's schedule with each part's minibatches taken ``base_iterations`` (the
    base) or ``batch_iterations`` (a batch) times over before the next part (``train``/``refresh --passes``; D
    counts each document once)."""
    from inference.infvoc.tos import step_size

    steps, seen = [], 0
    if kind == "passes":
        i = 0
        for p, part in enumerate(parts):
            seen += len(part)
            for _ in range(base_iterations if p == 0 else batch_iterations):
                for chunk in minibatches([part], size):
                    i += 1
                    steps.append((chunk, step_size(i, settings.tau0, settings.kappa),
                                  float(settings.corpus_size or seen) / len(chunk), i))
        return steps
    if kind == "stream":
        for i, chunk in enumerate(minibatches(parts, size), 1):
            seen += len(chunk)
            steps.append((chunk, step_size(i, settings.tau0, settings.kappa),
                          float(settings.corpus_size or seen) / len(chunk), i))
        return steps
    seen, t = len(parts[0]), 0
    steps += [(parts[0], 1.0, 1.0, 10_000 + j) for j in range(1, base_iterations + 1)]
    for part in parts[1:]:
        seen += len(part)
        for _ in range(batch_iterations):
            t += 1
            steps.append((part, step_size(t, settings.tau0, settings.kappa),
                          float(settings.corpus_size or seen) / len(part), t))
    return steps


def alpha_step(alpha, alpha_stats, n_docs: int, eps: float) -> np.ndarray:
    """The bench fixvoc's alpha M-step: Newton-Raphson on the step's E[log theta] sums (eps 1, batch EM), moved
    by eps online (``OnlineAlpha``)."""
    from inference.dirichlet import newton_alpha

    return (1.0 - eps) * alpha + eps * newton_alpha(alpha, alpha_stats, n_docs)


def sample_alpha_stats(counts: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """sum_d Psi(alpha_k + n_dk) - Psi(A + N_d) of (D, K) document-topic counts (the hybrid step's last sample)."""
    return (digamma(alpha[None, :] + counts) - digamma(alpha.sum() + counts.sum(axis=1, keepdims=True))).sum(axis=0)


def run_dirichlet(steps, V: int, lookup, K: int, local: str, seed: int, eta: float, init: str,
                  first: str = "online", fit_alpha: bool = False, warm: bool = False, burn_in: int = 5,
                  samples: int = 10):
    """Rungs A (``local="vb"``) and B (``"hybrid"``): lambda (K x V) after the ``steps`` (:func:`schedule`);
    ``first="batch"``: the first step a whole one (lambda = eta + its statistics, as ``train --iterations 1``
    before online refreshes, the bench's fixvoc hybrid-null)."""
    from inference.estep import estep_documents, initial_gamma
    from inference.hybrid import document_seeds, hybrid_documents, sampling_weights

    rng = np.random.default_rng(seed)
    lam = rng.gamma(100.0, 1.0 / 100.0, size=(K, V))               # Hoffman's start: about 1 a word
    if init == "eta":                                                 # the prior's mass, eta a word
        lam *= eta
    elif init == "flat":                                              # 1 a word, symmetric (hybrid only)
        lam = np.ones((K, V))
    alpha = np.full(K, 1.0 / K)
    last_z = {}                         # ``warm``: each part's z from its last step (the engine's warm start)
    for n, (chunk, eps, scale, step) in enumerate(steps):
        block = vocab_block(chunk, lookup)
        elog = digamma(lam) - digamma(lam.sum(axis=1, keepdims=True))
        local_elog = np.ascontiguousarray(elog[:, block.vocab_ids].T)             # (U, K)
        eb = np.exp(local_elog - local_elog.max(axis=1, keepdims=True))
        if local == "vb":
            gamma = initial_gamma(block.indptr, block.counts, alpha)
            sstats, alpha_stats = estep_documents(block.indptr, block.local_terms, block.counts, gamma,
                                                  np.exp(local_elog), alpha, 1e-3, 100, True)[:2]
        else:
            z = last_z.get(id(chunk)) if warm else None
            start = z is None
            z = np.zeros(int(block.counts.sum()), dtype=np.int32) if start else z
            sstats, alpha_stats = hybrid_documents(block.indptr, block.local_terms, block.counts, z,
                                                   sampling_weights(eb), alpha, burn_in, samples,
                                                   document_seeds(block.doc_ids, seed, step), start, False, True)[:2]
            last_z[id(chunk)] = z
        if n == 0 and first == "batch":
            eps = 1.0
        if fit_alpha:
            alpha = alpha_step(alpha, alpha_stats, block.n_docs, eps)
        target = np.full((K, V), eta)
        target[:, block.vocab_ids] += scale * np.asarray(sstats).T
        lam = (1.0 - eps) * lam + eps * target
    return lam, alpha


def run_tos(steps, base, settings, sets, seed: int, fit_alpha: bool = False, burn_in: int = 5, samples: int = 10,
            watch=None, unscaled=frozenset()):
    """Rungs C and D: the TOS after the ``steps`` (:func:`schedule`), the kernels of ``run_minibatch`` as
    :func:`infvoc_sweep.run_model` runs them (:func:`update_topic` per topic, with the step's eps and scale;
    reordered every U steps); ``watch(n, sets)`` is called after each step, and the words of ``unscaled`` enter
    (7.6)-(7.8) at their counts, not D/|S| times them (:mod:`infvoc_tail`'s screens)."""
    from inference.infvoc.local_step import StringBlock, sample_block
    from inference.infvoc.tos import expand_topic, ranking_log_base, reorder_topic, update_topic

    K = len(sets)
    alpha = np.full(K, 1.0 / K)
    for n, (chunk, eps, scale, step) in enumerate(steps, 1):
        if settings.expand == "every":
            words = {w for _, t in chunk for w in t}
            sets = [expand_topic(ts, words, settings.alpha_beta, n) for ts in sets]
        block = StringBlock.from_documents(chunk)
        log_base = base.log_probs(block.terms)
        phi, last = sample_block(block, sets, log_base, alpha, seed, step, burn_in, samples)
        if fit_alpha:
            alpha = alpha_step(alpha, sample_alpha_stats(last, alpha), block.n_docs, eps)
        ranked = ranking_log_base(log_base, settings)
        out = []
        for k, topic in enumerate(sets):
            at = np.flatnonzero(phi[:, k] > 0)
            counts = phi[at, k] / np.where(np.isin(block.terms[at], list(unscaled)), scale, 1.0) if unscaled else phi[at, k]
            topic = update_topic(topic, block.terms[at], counts, ranked[at], scale, eps, settings.alpha_beta, n)
            out.append(reorder_topic(topic, settings.truncation) if n % settings.delay == 0 else topic)
        sets = out
        if watch is not None:
            watch(n, sets)
    return sets, alpha


def random_sets(vocab, K: int, alpha_beta: float, base, seed: int) -> list:
    """Rung D's ``--tos-start random`` (fixvoc's kind of start, Hoffman's Gamma(100, 1/100) lambda): every topic's
    TOS the words ``vocab`` at c ~ Gamma(100, 1/100) pseudo-counts each, as one update with counts c at eps 1 leaves
    it: nu1 = 1 + c, nu2 = alpha^beta + the c after it, R = G_0 c, sorted by R (a reordering), entered at 0."""
    from inference.infvoc.tos import TopicSet

    terms = np.asarray(sorted(vocab), dtype=object)
    g0 = np.exp(base.log_probs(terms))
    out, generator = [], np.random.default_rng(seed)
    for _ in range(K):
        c = generator.gamma(100.0, 1.0 / 100.0, terms.shape[0])
        order = np.argsort(-(g0 * c), kind="stable")
        c = c[order]
        after = np.concatenate([np.cumsum(c[::-1])[::-1][1:], [0.0]])
        out.append(TopicSet(terms[order], 1.0 + c, alpha_beta + after, g0[order] * c,
                            np.zeros(terms.shape[0], dtype=np.int64)))
    return out


def closed_sets(vocab_order, K: int, alpha_beta: float, with_filters, settings):
    """Rung C's start: every topic's TOS the whole closed vocabulary in ``vocab_order`` at Beta(1, alpha^beta)."""
    from inference.infvoc.tos import TopicSet

    terms = np.asarray(vocab_order, dtype=object)
    n = terms.shape[0]
    return with_filters([TopicSet(terms.copy(), np.ones(n), np.full(n, float(alpha_beta)), np.zeros(n),
                                  np.zeros(n, dtype=np.int64)) for _ in range(K)], settings)


def dirichlet_thetas(lam, lookup, documents, alpha, by: str = "mean") -> pd.DataFrame:
    """theta of every (id, tokens) folded in over the closed vocabulary's words: with exp(E_q[log beta]) scaled per
    word (``by="elog"``, the exact E-step (3.4), as ``infer`` folds a variational model in), or E_q[beta] = lambda /
    sum_w lambda (``"mean"``, as the infinite model's ``infer`` folds in with E_q[beta])."""
    from inference.heldout import fold_in, word_factor

    block = vocab_block(documents, lookup)
    if by == "elog":
        factor, _ = word_factor(digamma(lam) - digamma(lam.sum(axis=1, keepdims=True)))
        fit = fold_in(block, factor, alpha)
    else:
        fit = fold_in(block, lam / lam.sum(axis=1, keepdims=True), alpha)
    theta = fit.gamma / fit.gamma.sum(axis=1, keepdims=True)
    return pd.DataFrame({"doc_id": block.doc_ids, "theta": list(theta)})


def separation(top, thetas, documents=None) -> dict:
    """Mean pairwise Jaccard overlap of the topics' top-word sets; the 2 largest topics' share of the theta mass;
    with ``documents`` (the stream's word sets) the topics' sizes against their NPMI (issue 30): how many hold
    under half the mean share of the theta mass ("small"), how many have NPMI below 0, and the mean NPMI of the
    small topics and of the others."""
    sets = [set(t) for t in top]
    jaccard = np.mean([len(a & b) / len(a | b) for a, b in itertools.combinations(sets, 2)])
    share = np.stack([np.asarray(t) for t in thetas["theta"]]).sum(axis=0)
    share = share / share.sum()
    mass = np.sort(share)[::-1]
    out = {"jaccard": float(jaccard), "top2_mass": float(mass[:2].sum())}
    if documents is not None:
        per = np.array([npmi([t], documents) for t in top])
        small = share < 0.5 / share.shape[0]
        out.update(small_topics=int(small.sum()), below_zero=int((per < 0).sum()),
                   npmi_small=float(per[small].mean()) if small.any() else float("nan"),
                   npmi_others=float(per[~small].mean()), npmi_median=float(np.median(per)))
    return out


def main() -> None:
    from drivers.models.infvoc.model import InfVocModel
    from drivers.preparation.text import stopword_list
    from inference.infvoc.base_measure import CharNgramBase
    from inference.infvoc.tos import OnlineSettings, TopicSet, with_filters

    parser = stream_arguments("python-news-joined")
    parser.add_argument("--alpha-beta", type=float, default=1000.0)
    parser.add_argument("--truncation", type=int, default=2000, help="T of rung D (C: above V)")
    parser.add_argument("--delay", type=int, default=10)
    parser.add_argument("--corpus-size", type=float, default=0.0, help="D of the update (0: documents seen)")
    parser.add_argument("--eta", type=float, default=None, help="A/B's topic-word prior (default 1/K)")
    parser.add_argument("--init", choices=("random", "eta", "flat"), default="random",
                        help="A/B's lambda start: Gamma(100, 1/100) (Hoffman's), eta times that, or 1 everywhere")
    parser.add_argument("--first-step", choices=("online", "batch"), default="online",
                        help="A/B: the first minibatch's step eps_1 (online) or 1 (batch)")
    parser.add_argument("--schedule", choices=("stream", "sweeps", "passes"), default="stream",
                        help="stream: one step per minibatch (infvoc's); sweeps: the bench's fixvoc (20 batch steps "
                             "over the base, 20 online steps over each whole batch); passes: each part's minibatches --iterations times")
    parser.add_argument("--iterations", type=int, default=20, help="steps (sweeps) or passes (passes) per part")
    parser.add_argument("--batch-iterations", type=int, default=None, help="the same for the batches (default: "
                        "--iterations): fewer steps over a batch forget less of the parts before it")
    parser.add_argument("--fit-alpha", action="store_true", help="every rung: alpha by Newton-Raphson per step "
                        "(moved by eps), as the bench's fixvoc; default alpha 1/K fixed, as infvoc")
    parser.add_argument("--warm", action="store_true", help="B: each part's z kept from its previous step "
                        "(sweeps, passes) instead of drawn afresh")
    parser.add_argument("--frequent", choices=("keep", "base", "batch"), default="keep",
                        help="the batches' words prepare cut from the base as too frequent (df > 50%%): kept (as "
                             "refresh --vocabulary infinite does), left out (base), or also each batch's own (batch)")
    parser.add_argument("--theta-by", choices=("elog", "mean"), default="mean",
                        help="A/B's fold-in: exp(E[log beta]) (lda's infer) or E[beta] (infvoc's)")
    parser.add_argument("--vocab", choices=("stream", "base"), default="stream")
    parser.add_argument("--c-order", choices=("frequency", "string"), default="frequency")
    parser.add_argument("--rungs", nargs="*", default=["A", "B", "C", "D-sampled", "D-every"])
    parser.add_argument("--min-df", type=int, default=1, help="leave out the words used in fewer documents of the "
                        "whole stream (a screen: is the NPMI tail the rare words' doing?)")
    parser.add_argument("--tos-start", choices=("empty", "random"), default="empty",
                        help="D's start: empty TOS (infvoc's) or the base vocabulary at random pseudo-counts")
    options = parser.parse_args()

    rows = CORPORA[options.corpus]()
    stop = set(stopword_list("english"))
    base_vocab, parts = stream_parts(rows, options.batches, stop)
    if options.frequent != "keep":        # the words prepare cut from the base as too frequent (df > 50%)
        quarter = len(rows) // 4
        base_df = Counter(w for r in rows[:quarter] for w in set(tokens_of(r["text"], stop)))
        frequent = {w for w, n in base_df.items() if n > 0.5 * quarter}
        if options.frequent == "batch":   # and each batch's own words of df > 50%
            for part in parts[1:]:
                batch_df = Counter(w for _, t in part for w in set(t))
                frequent |= {w for w, n in batch_df.items() if n > 0.5 * len(part)}
        parts = [[(d, [w for w in t if w not in frequent]) for d, t in part] for part in parts]
        parts = [[(d, t) for d, t in part if t] for part in parts]
        print(f"left out as too frequent: {sorted(frequent)}")
    if options.min_df > 1:
        stream_df = Counter(w for part in parts for _, t in part for w in set(t))
        parts = [[(d, [w for w in t if stream_df[w] >= options.min_df]) for d, t in part] for part in parts]
        parts = [[(d, t) for d, t in part if t] for part in parts]
        print(f"left out: the {sum(n < options.min_df for n in stream_df.values())} words of stream df < {options.min_df}")
    base = CharNgramBase.fit(base_vocab)
    frequency = Counter(w for part in parts for _, t in part for w in t)
    closed = base_vocab if options.vocab == "base" else sorted(frequency)
    lookup = {w: i for i, w in enumerate(closed)}
    closed_parts = [[(d, [w for w in t if w in lookup]) for d, t in part] for part in parts]
    closed_parts = [[(d, t) for d, t in part if t] for part in closed_parts]
    everything, last, reference, labels, test_ids = scoring_sets(rows, stop, options)
    every_doc = [(r["id"], [w for w in tokens_of(r["text"], stop) if w in lookup]) for r in rows]
    every_doc = [(d, t) for d, t in every_doc if t]
    quarter, size = len(rows) // 4, -(-(len(rows) - len(rows) // 4) // options.batches)
    seen_in_base = set().union(*everything[:quarter])
    bounds = [(0, quarter)] + [(quarter + i * size, quarter + (i + 1) * size) for i in range(options.batches)]
    K = options.topics
    eta = options.eta if options.eta is not None else 1.0 / K
    print(f"{options.corpus}: {len(rows)} documents, closed vocabulary ({options.vocab}) {len(closed)} words, "
          f"{len(minibatches(closed_parts, options.minibatch_size))} minibatches, schedule {options.schedule}; K={K} S={options.minibatch_size} tau0={options.tau0} kappa={options.kappa} "
          f"D={options.corpus_size or 'seen'} seed {options.seed}", flush=True)
    for rung in options.rungs:
        began = time.time()
        fields = dict(alpha_beta=options.alpha_beta, truncation=options.truncation, delay=options.delay,
                      tau0=options.tau0, kappa=options.kappa, corpus_size=options.corpus_size)
        if rung in ("A", "B"):
            settings = OnlineSettings(**fields)
            steps = schedule(closed_parts, options.schedule, options.minibatch_size, settings, options.iterations,
                             options.batch_iterations or options.iterations)
            lam, alpha = run_dirichlet(steps, len(closed), lookup, K, "vb" if rung == "A" else "hybrid",
                                       options.seed, eta, options.init, options.first_step, options.fit_alpha,
                                       options.warm)
            longer = [[closed[i] for i in np.argsort(-row, kind="stable")[:60]] for row in lam]
            thetas = dirichlet_thetas(lam, lookup, every_doc, alpha, options.theta_by)
        else:
            if rung == "C":
                settings = OnlineSettings(**{**fields, "truncation": len(closed) + 1})
                order = (sorted(closed, key=lambda w: (-frequency[w], w)) if options.c_order == "frequency"
                         else sorted(closed))
                steps = schedule(closed_parts, options.schedule, options.minibatch_size, settings,
                                 options.iterations, options.batch_iterations or options.iterations)
                sets, alpha = run_tos(steps, base, settings,
                                      closed_sets(order, K, options.alpha_beta, with_filters, settings), options.seed,
                                      options.fit_alpha)
            else:
                settings = OnlineSettings(**{**fields, "expand": rung.split("-", 1)[1]})
                steps = schedule(parts, options.schedule, options.minibatch_size, settings, options.iterations,
                                 options.batch_iterations or options.iterations)
                start = (random_sets(base_vocab, K, options.alpha_beta, base, options.seed)
                         if options.tos_start == "random" else [TopicSet.empty() for _ in range(K)])
                sets, alpha = run_tos(steps, base, settings, with_filters(start, settings), options.seed,
                                      options.fit_alpha)
            model = InfVocModel(sets, base, alpha, settings, pd.Index(base_vocab, dtype=object))
            longer = [[w for w, _, _ in t] for t in model.top_words(60)]
            thetas = infer_thetas(model, every_doc)
        top = [t[:10] for t in longer]
        scores = {"whole": npmi(top, everything), "last": npmi(top, last),
                  "reference": npmi(top, reference) if reference is not None else float("nan")}
        scores["parts"] = [round(npmi(top, everything[a:b]), 4) for a, b in bounds]    # forgetting: NPMI per part
        in_base = [[w for w in t if w in seen_in_base][:10] for t in longer]     # ... over words the base has
        scores["parts_base_words"] = [round(npmi(in_base, everything[a:b]), 4) for a, b in bounds]
        accuracy = classification_accuracy(thetas, labels, test_ids)
        scores.update(svm_balanced=accuracy["svm_balanced"], logistic_balanced=accuracy["logistic_balanced"],
                      **separation(top, thetas, everything))
        print("RESULT " + json.dumps({"rung": rung, "seed": options.seed, "vocab": options.vocab,
                                      "corpus_size": options.corpus_size, "init": options.init, "first": options.first_step, "schedule": options.schedule, "fit_alpha": options.fit_alpha, "theta_by": options.theta_by, "warm": options.warm, "frequent": options.frequent,
                                      "batch_iterations": options.batch_iterations, "min_df": options.min_df, "tos_start": options.tos_start,
                                      **{k: v if k.startswith("parts") else round(v, 4) for k, v in scores.items()},
                                      "seconds": round(time.time() - began, 1)}), flush=True)
        for k, words in enumerate(top[:6]):
            print(f"  topic {k}: " + " ".join(words))


if __name__ == "__main__":
    main()
