"""The declarative network spec of a topic model built from Dirichlet and Pitman-Yor vectors ([001] §3; 001_003
extract §2): parsing and validation, one-line errors naming the node.

A spec is a JSON object (grammar and examples in README, "Topic models as networks of Pitman-Yor vectors")::

    {"name": "stm",
     "parameters": {"b_seg": {"value": 10.0, "sample": true}},          # optional: shared hyperparameters
     "nodes": {
        "doc": {"index": ["document"], "over": "topic", "dirichlet": 0.1},
        "seg": {"index": ["segment"], "over": "topic", "pyp": {"a": 0.0, "b": "b_seg"},
                "parents": [{"node": "doc", "index": ["document"]}]},
        "phi": {"index": ["topic"], "over": "word", "dirichlet": 0.01}},
     "topic": {"node": "seg", "index": ["segment"]},
     "word": {"node": "phi", "index": ["topic"]}}

A node is a family of probability vectors, one per value of its ``index`` (a list of the corpus' index kinds
:data:`INDEX_KINDS`), each over topics or words (``over``), and is a Dirichlet root (``dirichlet``: the prior
count of every component), a fixed uniform vector (``uniform``: true), or a Pitman-Yor vector (``pyp``: discount
``a``, concentration ``b``; ``dp``: ``b`` only, a = 0) over one or more ``parents`` mixed by weights rho with a
Dirichlet(``gamma``) prior integrated out (E6, E9). A parent reference maps the child's index to the parent's
with index expressions (:data:`EXPRESSIONS`: the kinds themselves plus ``previous_segment``); a parent whose
index does not exist (the previous segment of a first segment) is dropped, or replaced by ``if_missing``.
A hyperparameter is a number (fixed), ``{"value": x, "sample": true}`` (this node's own, sampled), or the name of
an entry of ``parameters`` (shared by every node that names it).
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from inference.errors import UsageError
from inference.pdpnet.spec_graph import (LIST, ancestors, check_lists, check_sampler, column_name, is_list,
                                         topological)

#: what the corpus provides to index a family of vectors, with the size of each (compile time); besides these,
#: ``column:NAME``: the value of a document's kept column NAME (``prepare --keep-columns``; one value per document);
#: ``list:NAME``: a kept column holding a list per document (a parent reference from a document gives one parent per
#: value, an author-topic network; a family indexed by it has one vector per value)
INDEX_KINDS = ("corpus", "document", "segment", "topic", "previous_word")
#: index expressions: each kind, plus previous_segment (a segment, missing for a document's first segment)
EXPRESSIONS = INDEX_KINDS + ("previous_segment",)
EXPRESSION_KIND = {**{k: k for k in INDEX_KINDS}, "previous_segment": "segment"}
COLUMN = "column:"
#: a Pitman-Yor vector's mixing weights rho over its parents: Dirichlet(gamma) integrated out (E9), or fixed 1/n
WEIGHTS = ("dirichlet", "uniform")


def is_column(kind: str) -> bool:
    """``column:NAME`` or ``list:NAME``: the documents' values of a kept column."""
    return any(kind.startswith(p) and len(kind) > len(p) for p in (COLUMN, LIST))


def expression_kind(expr: str) -> str:
    """The index kind an expression gives (``previous_segment``: a segment; a column: itself)."""
    return expr if is_column(expr) else EXPRESSION_KIND[expr]
OVER = ("topic", "word")

_NODE_KEYS = {"index", "over", "dirichlet", "uniform", "pyp", "dp", "mixture", "parents", "description", "weights"}
_TOP_KEYS = {"name", "description", "parameters", "nodes", "topic", "word", "sampler"}
#: the topic side's samplers: Du's table indicators (exact), his collapsed multiplicity sampler (not exact) or the
#: exact multiplicity sampler (:mod:`inference.pdpnet.multiplicity`, exact)
SAMPLERS = ("indicators", "cmgs", "exact")


@dataclass(frozen=True)
class Param:
    """A hyperparameter: ``kind`` 'a' (discount) or 'b' (concentration), its value, whether it is sampled."""
    name: str
    kind: str
    value: float
    sample: bool


@dataclass(frozen=True)
class ParentRef:
    node: str
    index: tuple[str, ...]
    gamma: float = 1.0
    if_missing: "ParentRef | None" = None


@dataclass(frozen=True)
class NodeSpec:
    name: str
    index: tuple[str, ...]
    over: str
    kind: str                      # 'dirichlet', 'uniform' or 'pyp'
    alpha: float = 0.0             # dirichlet: prior count of each component
    a: str = ""                    # pyp: names of its Param entries
    b: str = ""
    parents: tuple[ParentRef, ...] = ()
    weights: str = "dirichlet"     # pyp: rho ~ Dirichlet(gamma) integrated out, or fixed uniform over its parents
    mixture: bool = False          # pyp with a = 0, b infinite: a customer goes straight to one parent picked by rho


@dataclass(frozen=True)
class DrawRef:
    node: str
    index: tuple[str, ...]


@dataclass
class NetworkSpec:
    """A validated network: nodes in topological order (parents first), parameters, the two draws."""
    name: str
    nodes: dict[str, NodeSpec]
    params: dict[str, Param]
    topic: DrawRef
    word: DrawRef
    order: list[str] = field(default_factory=list)
    sampler: str = "indicators"

    @property
    def columns(self) -> list[str]:
        """The kept columns the spec indexes vectors by (``column:NAME``), sorted."""
        return sorted({column_name(k) for n in self.nodes.values() for k in _kinds(n) if is_column(k)})

    @property
    def lists(self) -> list[str]:
        """The kept columns read as lists (``list:NAME``), sorted."""
        return sorted({column_name(k) for n in self.nodes.values() for k in _kinds(n) if is_list(k)})

    @property
    def reads_segments(self) -> bool:
        """Whether a vector is indexed by segment (the corpus needs ``prepare --segments``; otherwise a document is
        one segment)."""
        return any("segment" in n.index for n in self.nodes.values())

    @property
    def reads_order(self) -> bool:
        """Whether a vector is indexed by previous_word (the corpus needs ``prepare --ordered``)."""
        return any("previous_word" in k for n in self.nodes.values() for k in _kinds(n))


def _kinds(node: NodeSpec):
    """The index kinds ``node`` and its parent references use."""
    yield from node.index
    for p in node.parents:
        while p is not None:
            yield from p.index
            p = p.if_missing


def _err(where: str, msg: str) -> UsageError:
    return UsageError(f"network spec: {where}: {msg}")


def _number(x, where, what) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        raise _err(where, f"{what} must be a finite number, got {x!r}")
    return float(x)


def _param(raw, node: str, kind: str, params: dict[str, Param]) -> str:
    """The name of the Param of hyperparameter ``kind`` of ``node`` (registering a node-own one)."""
    where = f"node '{node}'"
    if isinstance(raw, str):
        if raw not in params:
            raise _err(where, f"{kind} names the parameter '{raw}', which 'parameters' does not declare")
        if params[raw].kind != kind:
            raise _err(where, f"{kind} names the parameter '{raw}', declared as a {params[raw].kind}")
        return raw
    name = f"{node}.{kind}"
    if isinstance(raw, dict):
        unknown = set(raw) - {"value", "sample"}
        if unknown or "value" not in raw:
            raise _err(where, f"{kind} must be a number, a parameter name or {{\"value\": x, \"sample\": bool}}")
        params[name] = _check_param(Param(name, kind, _number(raw["value"], where, kind), bool(raw.get("sample"))),
                                    where)
    else:
        params[name] = _check_param(Param(name, kind, _number(raw, where, kind), False), where)
    return name


def _check_param(p: Param, where: str) -> Param:
    if p.kind == "a" and not 0.0 <= p.value < 1.0:
        raise _err(where, f"discount {p.name} = {p.value} must be in [0, 1)")
    if p.kind == "b" and not p.value > 0.0:
        raise _err(where, f"concentration {p.name} = {p.value} must be > 0")
    return p


def _index(raw, where: str, allowed: tuple[str, ...], what: str) -> tuple[str, ...]:
    if not isinstance(raw, list) or not all(isinstance(x, str) for x in raw):
        raise _err(where, f"{what} must be a list of names")
    for x in raw:
        if x not in allowed and not is_column(x):
            raise _err(where, f"unknown index '{x}' in {what} (known: {', '.join(allowed)}, column:NAME, "
                              "list:NAME)")
    if len(set(raw)) != len(raw):
        raise _err(where, f"{what} repeats a name")
    return tuple(raw)


def _parent(raw, node: str) -> ParentRef:
    where = f"node '{node}'"
    if not isinstance(raw, dict) or "node" not in raw:
        raise _err(where, "every parent is {\"node\": NAME, \"index\": [...]}")
    unknown = set(raw) - {"node", "index", "gamma", "if_missing"}
    if unknown:
        raise _err(where, f"unknown parent key '{sorted(unknown)[0]}'")
    gamma = _number(raw.get("gamma", 1.0), where, "gamma")
    if gamma <= 0:
        raise _err(where, f"gamma must be > 0, got {gamma}")
    fallback = _parent(raw["if_missing"], node) if raw.get("if_missing") is not None else None
    if fallback is not None and "previous_segment" in fallback.index:
        raise _err(where, "an 'if_missing' parent cannot itself use previous_segment")
    return ParentRef(str(raw["node"]), _index(raw.get("index", []), where, EXPRESSIONS, "a parent's index"), gamma,
                     fallback)


def _node(name: str, raw, params: dict[str, Param]) -> NodeSpec:
    where = f"node '{name}'"
    if not isinstance(raw, dict):
        raise _err(where, "must be an object")
    unknown = set(raw) - _NODE_KEYS
    if unknown:
        raise _err(where, f"unknown key '{sorted(unknown)[0]}'")
    index = _index(raw.get("index", ["corpus"]), where, INDEX_KINDS, "its index")
    over = raw.get("over")
    if over not in OVER:
        raise _err(where, f"'over' must be 'topic' or 'word', got {over!r}")
    kinds = [k for k in ("dirichlet", "uniform", "pyp", "dp", "mixture") if k in raw]
    if len(kinds) != 1:
        raise _err(where, "give exactly one of 'dirichlet', 'uniform', 'pyp', 'dp', 'mixture'")
    parents = raw.get("parents", [])
    if not isinstance(parents, list):
        raise _err(where, "'parents' must be a list")
    kind = kinds[0]
    if kind in ("dirichlet", "uniform"):
        if parents or "weights" in raw:
            raise _err(where, f"a {kind} root has no parents (nor weights)")
        if kind == "uniform" and raw["uniform"] is not True:
            raise _err(where, "'uniform' must be true")
        alpha = _number(raw["dirichlet"], where, "dirichlet") if kind == "dirichlet" else 0.0
        if kind == "dirichlet" and alpha <= 0:
            raise _err(where, f"dirichlet must be > 0, got {alpha}")
        return NodeSpec(name, index, over, kind, alpha=alpha)
    if not parents:
        raise _err(where, f"a {kind} vector needs at least one parent")
    if kind == "mixture":
        return _mixture(name, raw, index, over, parents, params)
    body = raw[kind]
    if not isinstance(body, dict):
        raise _err(where, f"'{kind}' must be an object")
    if kind == "dp":
        if set(body) - {"b"} or "b" not in body:
            raise _err(where, "'dp' is {\"b\": ...}")
        a = _param(0.0, name, "a", params)
    else:
        if set(body) - {"a", "b"} or "a" not in body or "b" not in body:
            raise _err(where, "'pyp' is {\"a\": ..., \"b\": ...}")
        a = _param(body["a"], name, "a", params)
    b = _param(body["b"], name, "b", params)
    return NodeSpec(name, index, over, "pyp", a=a, b=b, parents=tuple(_parent(p, name) for p in parents),
                    weights=_weights(raw, where, parents))


def _weights(raw, where: str, parents) -> str:
    weights = raw.get("weights", "dirichlet")
    if weights not in WEIGHTS:
        raise _err(where, f"'weights' must be one of {', '.join(WEIGHTS)}, got {weights!r}")
    if weights == "uniform" and any("gamma" in p for p in parents if isinstance(p, dict)):
        raise _err(where, "'weights': 'uniform' fixes rho: its parents take no gamma")
    return weights


def _mixture(name: str, raw, index, over: str, parents, params: dict[str, Param]) -> NodeSpec:
    """``"mixture": true``: a Pitman-Yor vector with a = 0 and b infinite, i.e. exactly the rho-mixture of its
    parents; each of its customers goes straight to one parent (E6 with b -> inf: no table is shared). Its b
    is the parameter NAME.b = inf (fixed); only topic vectors per document or segment."""
    where = f"node '{name}'"
    if raw["mixture"] is not True:
        raise _err(where, "'mixture' must be true")
    if over != "topic":
        raise _err(where, "a mixture node is over topics")
    if not set(index) <= {"document", "segment"}:
        raise _err(where, f"a mixture node is indexed by document or segment, not {list(index)}")
    a = _param(0.0, name, "a", params)
    params[f"{name}.b"] = Param(f"{name}.b", "b", math.inf, False)
    return NodeSpec(name, index, over, "pyp", a=a, b=f"{name}.b",
                    parents=tuple(_parent(p, name) for p in parents), weights=_weights(raw, where, parents),
                    mixture=True)


def _derivable(expr: str, factors: tuple[str, ...]) -> bool:
    """Whether index expression ``expr`` has a value at every vector indexed by ``factors`` (or a token)."""
    if expr == "corpus":
        return True
    if expr == "document":
        return "document" in factors or "segment" in factors
    if expr == "previous_segment":
        return "segment" in factors
    if is_column(expr):                 # a document's value: known wherever its document is
        return expr in factors or "document" in factors or "segment" in factors
    return expr in factors


def _check_ref(ref, nodes, where: str, factors: tuple[str, ...], over: str) -> None:
    if ref.node not in nodes:
        raise _err(where, f"unknown node '{ref.node}'")
    target = nodes[ref.node]
    if target.over != over:
        raise _err(where, f"'{ref.node}' is over {target.over}s, this draw/vector over {over}s")
    if len(ref.index) != len(target.index):
        raise _err(where, f"'{ref.node}' is indexed by {list(target.index)}, the reference gives {list(ref.index)}")
    for expr, kind in zip(ref.index, target.index):
        if expression_kind(expr) != kind:
            raise _err(where, f"'{ref.node}' expects a {kind} index, the reference gives '{expr}'")
        if not _derivable(expr, factors):
            raise _err(where, f"unknown index '{expr}' for '{ref.node}': not known from {list(factors)}")


def _may_be_missing(ref: ParentRef) -> bool:
    return "previous_segment" in ref.index and (ref.if_missing is None or _may_be_missing(ref.if_missing))


def parse_network(raw) -> NetworkSpec:
    """Validate a spec (a dict, as loaded from JSON); raises UsageError with one line naming the node."""
    if not isinstance(raw, dict):
        raise _err("top level", "must be a JSON object")
    unknown = set(raw) - _TOP_KEYS
    if unknown:
        raise _err("top level", f"unknown key '{sorted(unknown)[0]}'")
    params: dict[str, Param] = {}
    for pname, praw in (raw.get("parameters") or {}).items():
        where = f"parameter '{pname}'"
        if not isinstance(praw, dict) or set(praw) - {"kind", "value", "sample"} or "value" not in praw:
            raise _err(where, "is {\"kind\": \"a\"|\"b\", \"value\": x, \"sample\": bool}")
        kind = praw.get("kind", "b")
        if kind not in ("a", "b"):
            raise _err(where, f"kind must be 'a' or 'b', got {kind!r}")
        params[pname] = _check_param(Param(pname, kind, _number(praw["value"], where, "value"),
                                           bool(praw.get("sample"))), where)
    nodes_raw = raw.get("nodes")
    if not isinstance(nodes_raw, dict) or not nodes_raw:
        raise _err("top level", "'nodes' must be a non-empty object")
    nodes = {name: _node(name, body, params) for name, body in nodes_raw.items()}
    for node in nodes.values():
        for p in node.parents:
            r: ParentRef | None = p
            while r is not None:
                _check_ref(r, nodes, f"node '{node.name}'", node.index, node.over)
                if r.node == node.name and "previous_segment" not in r.index:
                    raise _err(f"node '{node.name}'", f"cycle {node.name} -> {node.name}")
                r = r.if_missing
        if node.parents and all(_may_be_missing(p) for p in node.parents):
            raise _err(f"node '{node.name}'", "has no parent at a document's first segment (give 'if_missing')")
    draws = {}
    for which, over, ctx in (("topic", "topic", ("corpus", "document", "segment", "previous_word")),
                             ("word", "word", ("corpus", "document", "segment", "previous_word", "topic"))):
        d = raw.get(which)
        if not isinstance(d, dict) or "node" not in d:
            raise _err(which, f"'{which}' must be {{\"node\": NAME, \"index\": [...]}}")
        ref = DrawRef(str(d["node"]), _index(d.get("index", []), which, EXPRESSIONS, "the draw's index"))
        _check_ref(ref, nodes, f"the {which} draw", ctx, over)
        if "previous_segment" in ref.index:
            raise _err(f"the {which} draw", "cannot use previous_segment (missing at a first segment)")
        draws[which] = ref
    order = topological(nodes)
    reach = ancestors(nodes, {draws["topic"].node, draws["word"].node})
    for name in order:
        if name not in reach:
            raise _err(f"node '{name}'", "no data path: neither the topic nor the word draw reaches it")
    for pname in params:
        if not any(pname in (n.a, n.b) for n in nodes.values()):
            raise _err(f"parameter '{pname}'", "no node uses it")
    sampler = raw.get("sampler", "indicators")
    if sampler not in SAMPLERS:
        raise _err("top level", f"sampler must be one of {', '.join(SAMPLERS)}, got {sampler!r}")
    check_sampler(nodes, order, sampler, draws["word"])
    check_lists(nodes, draws, sampler)
    return NetworkSpec(str(raw.get("name", "network")), nodes, params, draws["topic"], draws["word"], order,
                       sampler)


def load_network(path) -> NetworkSpec:
    """Read and validate a spec file; a missing file or bad JSON is one line naming the file."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as exc:
        raise UsageError(f"network spec {p}: cannot read it ({exc.strerror})") from None
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"network spec {p}: not JSON ({exc.msg} at line {exc.lineno})") from None
    return parse_network(raw)
