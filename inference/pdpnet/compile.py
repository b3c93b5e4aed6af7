"""Compile a validated network spec and a corpus layout into the arrays the sampler kernels read ([001] §3).

Every family of vectors becomes the instances the data reach (the vectors that tokens draw from and their
ancestors), numbered parents first: families in topological order, instances of a family by their index, so a
parent instance always has a smaller id than its child (a previous segment precedes its segment). Per instance:
its kind (Dirichlet root, fixed uniform, Pitman-Yor), its dimension (K topics or V words), the offset of its
values in the flat cell arrays, its prior count (roots), its hyperparameters (indices into the parameter
lists) and its parents (CSR, with gamma, the Dirichlet prior of the mixing weights rho, E9; a vector with fixed
uniform weights over its n > 1 parents has gamma 1/n per edge and gamma_sum -1, which the kernels read as "rho = gamma",
:func:`inference.pdpnet.kernels.rho`). A parent reference whose index holds a list column the child is not indexed
by (``list:NAME``) gives one parent per value of the child's document. Per token: the
instance its topic is drawn from, and for every topic k the instance its word is drawn from.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from inference.errors import UsageError
from inference.pdpnet.spec import NetworkSpec, ParentRef, expression_kind, is_column
from inference.pdpnet.spec_graph import is_list

KIND_DIRICHLET, KIND_PYP, KIND_UNIFORM = 0, 1, 2
_KIND_CODE = {"dirichlet": KIND_DIRICHLET, "pyp": KIND_PYP, "uniform": KIND_UNIFORM}


@dataclass
class CorpusLayout:
    """Documents of segments of tokens: ``doc_ptr`` (D+1) into segments, ``seg_ptr`` (S+1) into ``words``;
    ``columns``: per kept column, ``(codes (D,) int64 in 0..size-1, size)`` (the documents' values, numbered), or
    for a list column (``list:NAME``) ``(ptr (D+1,), codes, size)``: document d's values ``codes[ptr[d]:ptr[d+1]]``."""
    doc_ptr: np.ndarray
    seg_ptr: np.ndarray
    words: np.ndarray
    vocab_size: int
    columns: dict = field(default_factory=dict)

    @staticmethod
    def of(docs: list[list[list[int]]], vocab_size: int) -> "CorpusLayout":
        """From nested lists: documents -> segments -> word ids."""
        doc_ptr, seg_ptr, words = [0], [0], []
        for d in docs:
            for s in d:
                words.extend(s)
                seg_ptr.append(len(words))
            doc_ptr.append(len(seg_ptr) - 1)
        return CorpusLayout(np.array(doc_ptr, np.int64), np.array(seg_ptr, np.int64),
                            np.array(words, np.int64), int(vocab_size))


@dataclass
class CompiledNetwork:
    spec: NetworkSpec
    K: int
    V: int
    family: np.ndarray        # (J,) family number (spec.order)
    key: np.ndarray           # (J,) flat index of the instance within its family
    kind: np.ndarray          # (J,) KIND_*
    dim: np.ndarray           # (J,)
    off: np.ndarray           # (J+1,) cell offsets
    alpha: np.ndarray         # (J,) Dirichlet prior count per component (roots)
    a_of: np.ndarray          # (J,) index into a_names (-1 for roots)
    b_of: np.ndarray          # (J,) index into b_names
    par_ptr: np.ndarray       # (J+1,) CSR of parent edges
    par_node: np.ndarray      # (E,)
    par_gamma: np.ndarray     # (E,)
    gamma_sum: np.ndarray     # (J,)
    eoff: np.ndarray          # (E+1,) offsets of s cells of every edge (the child's dimension)
    topic_inst: np.ndarray    # (N,) instance of a token's topic draw
    word_inst: np.ndarray     # (N, K) instance of a token's word draw for topic k
    words: np.ndarray         # (N,)
    a_names: list[str]
    b_names: list[str]
    a_values: np.ndarray
    b_values: np.ndarray

    @property
    def num_nodes(self) -> int:
        return int(self.kind.shape[0])

    @property
    def num_cells(self) -> int:
        return int(self.off[-1])

    def describe(self) -> str:
        """The compiled network, one line per family and a summary (what ``train`` prints)."""
        sp = self.spec
        lines = [f"network '{sp.name}': {self.num_nodes} vectors, {len(self.par_node)} edges, "
                 f"{self.num_cells} cells, {len(self.words)} tokens, K={self.K}, V={self.V}"]
        for f, name in enumerate(sp.order):
            node = sp.nodes[name]
            count = int(np.sum(self.family == f))
            if node.kind == "dirichlet":
                what = f"Dirichlet root (prior {node.alpha:g} per component)"
            elif node.kind == "uniform":
                what = "fixed uniform"
            elif node.mixture:
                what = f"mixture (b infinite, rho {node.weights}) of {', '.join(_ref_text(p) for p in node.parents)}"
            else:
                pa, pb = sp.params[node.a], sp.params[node.b]
                desc = [f"{p.kind}={p.value:g} {'sampled' if p.sample else 'fixed'}"
                        + (f" '{p.name}'" if "." not in p.name else "") for p in (pa, pb)]
                parents = ", ".join(_ref_text(p) for p in node.parents)
                what = f"PYP({', '.join(desc)}) over {parents}"
            lines.append(f"  {name}[{', '.join(node.index)}] over {node.over}s: {count} vectors, {what}")
        lines.append(f"  topic ~ {sp.topic.node}[{', '.join(sp.topic.index)}]; "
                     f"word ~ {sp.word.node}[{', '.join(sp.word.index)}]; sampler {sp.sampler}"
                     + (" (not exactly invariant)" if sp.sampler == "cmgs" else ""))
        return "\n".join(lines)


def _ref_text(p: ParentRef) -> str:
    s = f"{p.node}[{', '.join(p.index)}]" + (f" gamma {p.gamma:g}" if p.gamma != 1.0 else "")
    return s + (f" (else {_ref_text(p.if_missing)})" if p.if_missing is not None else "")


class _Context:
    """Index values of the corpus: sizes of the kinds and the maps between them."""

    def __init__(self, layout: CorpusLayout, K: int):
        D = len(layout.doc_ptr) - 1
        S = len(layout.seg_ptr) - 1
        N = len(layout.words)
        V = layout.vocab_size
        self.size = {"corpus": 1, "document": D, "segment": S, "topic": K, "previous_word": V + 1}
        self.doc_of_seg = np.repeat(np.arange(D), np.diff(layout.doc_ptr))
        self.first_seg = layout.doc_ptr[:-1][self.doc_of_seg] if S else np.zeros(0, np.int64)
        seg_of_tok = np.repeat(np.arange(S), np.diff(layout.seg_ptr))
        doc_of_tok = self.doc_of_seg[seg_of_tok] if N else np.zeros(0, np.int64)
        prev = np.full(N, V, dtype=np.int64)                   # V: start of a document
        if N > 1:
            same = doc_of_tok[1:] == doc_of_tok[:-1]
            prev[1:][same] = layout.words[:-1][same]
        self.token = {"corpus": np.zeros(N, np.int64), "document": doc_of_tok, "segment": seg_of_tok,
                      "previous_word": prev}
        self.column, self.lists = {}, {}
        for name, col in layout.columns.items():
            if len(col) == 3:                                    # a list column: CSR per document
                ptr, codes, size = np.asarray(col[0], np.int64), np.asarray(col[1], np.int64), int(col[2])
                if ptr.shape != (D + 1,) or (len(codes) and (codes.min() < 0 or codes.max() >= size)):
                    raise UsageError(f"network: list column '{name}' needs values in 0..{size - 1} per document")
                self.lists[f"list:{name}"] = (ptr, codes)
                self.size[f"list:{name}"] = size
                continue
            codes, size = np.asarray(col[0], np.int64), col[1]
            if codes.shape != (D,) or (D and (codes.min() < 0 or codes.max() >= size)):
                raise UsageError(f"network: column '{name}' needs one value in 0..{size - 1} per document")
            self.column[f"column:{name}"] = codes
            self.size[f"column:{name}"] = int(size)
            self.token[f"column:{name}"] = codes[doc_of_tok]

    def require(self, kinds) -> None:
        """Refuse a spec indexing by a column the corpus does not give (one line naming it)."""
        for kind in kinds:
            if is_column(kind) and kind not in (self.lists if is_list(kind) else self.column):
                raise UsageError(f"network spec: index '{kind}': the corpus has no such kept column "
                                 "(prepare --keep-columns NAME)")

    def evaluate(self, expr: str, values: dict[str, np.ndarray], n: int) -> np.ndarray:
        """Values of an index expression over ``n`` vectors (or tokens) whose factor values are ``values``;
        -1 where missing (previous segment of a first segment)."""
        if expr == "corpus":
            return np.zeros(n, np.int64)
        if expr == "document" and "document" not in values:
            return self.doc_of_seg[values["segment"]]
        if expr == "previous_segment":
            seg = values["segment"]
            return np.where(seg > self.first_seg[seg], seg - 1, -1)
        if is_column(expr) and expr not in values:          # the value of the vector's document
            doc = values["document"] if "document" in values else self.doc_of_seg[values["segment"]]
            return self.column[expr][doc]
        return values[expr]

    def expand(self, expr: str, values: dict[str, np.ndarray], n: int) -> list[np.ndarray]:
        """A list column's values for ``n`` vectors of documents: slot m holds each one's m-th value (-1 past its
        last)."""
        doc = values["document"] if "document" in values else self.doc_of_seg[values["segment"]]
        ptr, codes = self.lists[expr]
        count = ptr[doc + 1] - ptr[doc] if n else np.zeros(0, np.int64)
        return [np.where(count > m, codes[np.minimum(ptr[doc] + m, max(len(codes) - 1, 0))], -1)
                for m in range(int(count.max(initial=0)))]

    def flat(self, kinds, columns) -> np.ndarray:
        key = np.zeros(len(columns[0]) if columns else 0, np.int64)
        for kind, col in zip(kinds, columns):
            key = key * self.size[kind] + col
        return key

    def unflat(self, kinds, key) -> dict[str, np.ndarray]:
        out = {}
        for kind in reversed(kinds):
            out[kind] = key % self.size[kind]
            key = key // self.size[kind]
        return out


def compile_network(spec: NetworkSpec, layout: CorpusLayout, num_topics: int,
                    word_side: bool = True) -> CompiledNetwork:
    """The arrays of ``spec`` on ``layout`` with ``num_topics`` topics (module docstring). ``word_side=False``:
    the word draw's vectors are not made (the Gibbs engine keeps the topic-word counts); ``word_inst`` is then
    (1, K) zeros."""
    K, V = int(num_topics), int(layout.vocab_size)
    if K < 1:
        raise UsageError("network: the number of topics must be >= 1")
    ctx = _Context(layout, K)
    ctx.require({k for node in spec.nodes.values() for k in node.index})
    N = len(layout.words)
    fam_index = {name: f for f, name in enumerate(spec.order)}
    keys: dict[str, list[np.ndarray]] = {name: [] for name in spec.order}
    # the draws' instances
    tok_vals = dict(ctx.token)
    t_cols = [ctx.evaluate(e, tok_vals, N) for e in spec.topic.index]
    topic_key = ctx.flat(spec.nodes[spec.topic.node].index, t_cols) if t_cols else np.zeros(N, np.int64)
    keys[spec.topic.node].append(topic_key)
    word_keys = np.zeros((N if word_side else 0, K), np.int64)
    wnode = spec.nodes[spec.word.node]
    for k in range(K if word_side else 0):
        vals = dict(tok_vals, topic=np.full(N, k, np.int64))
        cols = [ctx.evaluate(e, vals, N) for e in spec.word.index]
        word_keys[:, k] = ctx.flat(wnode.index, cols) if cols else 0
    keys[spec.word.node].append(word_keys.ravel())
    # close over parents, children first
    resolved: dict[str, np.ndarray] = {}
    for name in reversed(spec.order):
        node = spec.nodes[name]
        own = np.unique(np.concatenate(keys[name])) if keys[name] else np.zeros(0, np.int64)
        if node.kind == "pyp":
            # a self-referential (previous segment) family reaches further back along its own chain
            while True:
                pk = _parent_keys(ctx, node, own)
                self_keys = [k for p, k, _ in pk if p == name]
                grown = np.unique(np.concatenate([own] + self_keys)) if self_keys else own
                if len(grown) == len(own):
                    break
                own = grown
            for pname, pkey, _ in _parent_keys(ctx, node, own):
                if pname != name:
                    keys[pname].append(pkey)
        resolved[name] = own
    # number instances
    base, fam_list, key_list = {}, [], []
    total = 0
    for name in spec.order:
        base[name] = total
        fam_list.append(np.full(len(resolved[name]), fam_index[name], np.int64))
        key_list.append(resolved[name])
        total += len(resolved[name])
    J = total
    family = np.concatenate(fam_list) if fam_list else np.zeros(0, np.int64)
    key = np.concatenate(key_list) if key_list else np.zeros(0, np.int64)

    def ids(name, k):
        pos = np.searchsorted(resolved[name], k)
        return base[name] + pos

    a_names = sorted(p for p in spec.params if spec.params[p].kind == "a")
    b_names = sorted(p for p in spec.params if spec.params[p].kind == "b")
    kind = np.zeros(J, np.int64)
    dim = np.zeros(J, np.int64)
    alpha = np.zeros(J)
    a_of = np.full(J, -1, np.int64)
    b_of = np.full(J, -1, np.int64)
    edges = []   # (child, order, parent, gamma)
    for name in spec.order:
        node = spec.nodes[name]
        sl = slice(base[name], base[name] + len(resolved[name]))
        kind[sl] = _KIND_CODE[node.kind]
        dim[sl] = K if node.over == "topic" else V
        alpha[sl] = node.alpha
        if node.kind == "pyp":
            a_of[sl] = a_names.index(node.a)
            b_of[sl] = b_names.index(node.b)
            child = np.arange(sl.start, sl.stop)
            have = np.zeros(len(child), bool)
            for r, (pname, pkey, gamma) in enumerate(_parent_keys(ctx, node, resolved[name], with_missing=True)):
                ok = pkey >= 0
                pid = np.where(ok, ids(pname, np.where(ok, pkey, 0)), -1)
                edges.append((child[ok], np.full(ok.sum(), r), pid[ok], np.full(ok.sum(), gamma)))
                have |= ok
            if not np.all(have):
                raise UsageError(f"network spec: node '{name}': a vector has no parent in this corpus")
    if edges:
        ch = np.concatenate([e[0] for e in edges])
        rk = np.concatenate([e[1] for e in edges])
        order = np.lexsort((rk, ch))
        par_child = ch[order]
        par_node = np.concatenate([e[2] for e in edges])[order].astype(np.int64)
        par_gamma = np.concatenate([e[3] for e in edges])[order].astype(np.float64)
    else:
        par_child = np.zeros(0, np.int64)
        par_node = np.zeros(0, np.int64)
        par_gamma = np.zeros(0)
    if np.any(par_node >= par_child):
        raise UsageError("network spec: the compiled graph is not ordered parents first (a cycle through "
                         "previous_segment?)")
    par_ptr = np.zeros(J + 1, np.int64)
    np.add.at(par_ptr, par_child + 1, 1)
    par_ptr = np.cumsum(par_ptr)
    gamma_sum = np.zeros(J)
    np.add.at(gamma_sum, par_child, par_gamma)
    _fixed_weights(spec, family, par_ptr, par_gamma, gamma_sum)
    off = np.concatenate([[0], np.cumsum(dim)]).astype(np.int64)
    eoff = np.concatenate([[0], np.cumsum(dim[par_child])]).astype(np.int64)
    topic_inst = ids(spec.topic.node, topic_key).astype(np.int64)
    word_inst = (ids(spec.word.node, word_keys.ravel()).reshape(N, K).astype(np.int64) if word_side
                 else np.zeros((1, K), np.int64))
    return CompiledNetwork(
        spec=spec, K=K, V=V, family=family, key=key, kind=kind, dim=dim, off=off, alpha=alpha, a_of=a_of,
        b_of=b_of, par_ptr=par_ptr, par_node=par_node, par_gamma=par_gamma, gamma_sum=gamma_sum, eoff=eoff,
        topic_inst=topic_inst, word_inst=word_inst, words=np.asarray(layout.words, np.int64),
        a_names=a_names, b_names=b_names,
        a_values=np.array([spec.params[n].value for n in a_names], np.float64),
        b_values=np.array([spec.params[n].value for n in b_names], np.float64))


def _fixed_weights(spec, family, par_ptr, par_gamma, gamma_sum) -> None:
    """A vector of a ``"weights": "uniform"`` node with n > 1 parents: gamma 1/n per edge, gamma_sum -1 (fixed rho
    = gamma, :func:`inference.pdpnet.kernels.rho`); with one parent rho = 1 either way (gamma 1)."""
    uniform = np.isin(family, [f for f, name in enumerate(spec.order) if spec.nodes[name].weights == "uniform"])
    n = np.diff(par_ptr)
    child = np.repeat(np.arange(len(n)), n)
    on = uniform[child]
    par_gamma[on] = 1.0 / n[child[on]]
    gamma_sum[uniform] = np.where(n[uniform] > 1, -1.0, 1.0)


def _parent_keys(ctx: _Context, node, own: np.ndarray, with_missing: bool = False):
    """Per parent reference of ``node``: (parent family, parent keys of the instances ``own`` (-1 missing), gamma).
    A missing reference with ``if_missing`` is replaced by its fallback where missing (same position)."""
    vals = ctx.unflat(node.index, own)
    n = len(own)
    out = []
    for ref in node.parents:
        slots = _ref_keys(ctx, ref, vals, n)        # one per reference; a list column: one per value
        fallback = ref.if_missing
        if fallback is None:
            out.extend((ref.node, pkey if with_missing else pkey[pkey >= 0], ref.gamma) for pkey in slots)
            continue
        # the reference and its fallback are two references, used where the first is missing (has no value)
        miss = slots[0] < 0 if slots else np.ones(n, bool)
        fslots = _ref_keys(ctx, fallback, vals, n)
        if with_missing:
            out.extend((ref.node, pkey, ref.gamma) for pkey in slots)
            out.extend((fallback.node, np.where(miss, fkey, -1), fallback.gamma) for fkey in fslots)
        else:
            out.extend((ref.node, pkey[pkey >= 0], ref.gamma) for pkey in slots)
            out.extend((fallback.node, fkey[miss & (fkey >= 0)], fallback.gamma) for fkey in fslots)
    return out


def _ref_keys(ctx, ref: ParentRef, vals, n) -> list[np.ndarray]:
    """The parent keys of reference ``ref`` (-1 missing): one array, or one per slot of the list column it
    expands."""
    grow = [e for e in ref.index if is_list(e) and e not in vals]
    kinds = [expression_kind(e) for e in ref.index]
    if not kinds:
        return [np.zeros(n, np.int64)]
    fixed = {e: ctx.evaluate(e, vals, n) for e in ref.index if e not in grow}
    out = []
    for slot in (ctx.expand(grow[0], vals, n) if grow else [None]):
        cols = [slot if e in grow else fixed[e] for e in ref.index]
        missing = np.zeros(n, bool)
        for c in cols:
            missing |= c < 0
        out.append(np.where(missing, -1, ctx.flat(kinds, [np.maximum(c, 0) for c in cols])))
    return out
