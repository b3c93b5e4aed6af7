"""The checks of a network spec's graph ([001] §3; :mod:`inference.pdpnet.spec` parses the nodes): parents before
children (no cycle), which nodes a draw reaches, and where a list column (``list:NAME``, issue 28: several values
per document, e.g. its authors) may go: in a family's index (one vector per value) and in parent references from
a document's vectors (one parent per value: a multi-parent vector with a varying number of parents), never in a
draw. One-line errors naming the node."""
from __future__ import annotations

from inference.errors import UsageError

LIST = "list:"


def is_list(kind: str) -> bool:
    """``list:NAME``: a kept column holding a list per document."""
    return kind.startswith(LIST) and len(kind) > len(LIST)


def column_name(kind: str) -> str:
    """NAME of ``column:NAME`` or ``list:NAME``."""
    return kind.split(":", 1)[1]


def _err(where: str, msg: str) -> UsageError:
    return UsageError(f"network spec: {where}: {msg}")


def _refs(node):
    """Every parent reference of ``node``, fallbacks (``if_missing``) included."""
    for p in node.parents:
        while p is not None:
            yield p
            p = p.if_missing


def expanding(node, ref) -> list[str]:
    """The list kinds of ``ref`` that give one parent per value (those not in ``node``'s own index)."""
    return [k for k in ref.index if is_list(k) and k not in node.index]


def check_lists(nodes: dict, draws: dict, sampler: str) -> None:
    """Refuse a list column in a draw, a reference expanding two list columns, one name used both as
    ``column:NAME`` and ``list:NAME``, and varying parents under ``cmgs`` or ``exact``."""
    for which, ref in draws.items():
        for kind in ref.index:
            if is_list(kind):
                raise _err(f"the {which} draw", f"'{kind}' holds several values per document: it indexes "
                                                "parents (one per value), not a draw")
    used = {}
    for node in nodes.values():
        kinds = list(node.index)
        for ref in _refs(node):
            kinds += ref.index
            grows = expanding(node, ref)
            if len(grows) > 1:
                raise _err(f"node '{node.name}'", f"a parent reference may expand one list column, it gives {grows}")
            if grows and sampler in ("cmgs", "exact"):
                why = f"('{grows[0]}' gives one per value); use \"sampler\": \"indicators\""
                raise _err(f"node '{node.name}'", f"sampler '{sampler}' needs one parent per Pitman-Yor vector {why}")
        for kind in kinds:
            if ":" in kind and used.setdefault(column_name(kind), kind) != kind:
                raise _err(f"node '{node.name}'", f"column '{column_name(kind)}' is used both as "
                                                  f"'{used[column_name(kind)]}' and '{kind}'")
        if node.weights == "uniform" and sampler in ("cmgs", "exact"):
            raise _err(f"node '{node.name}'", f"sampler '{sampler}' does not take 'weights': 'uniform'")


def check_sampler(nodes: dict, order: list[str], sampler: str, word=None) -> None:
    """Refuse under ``cmgs`` or ``exact`` a mixture node and a Pitman-Yor word side other than pyp-lda's (the word
    draw's node ``word``, indexed by [topic], over one corpus-level Dirichlet root or uniform vector:
    :mod:`inference.pdpnet.word_mult`)."""
    if sampler not in ("cmgs", "exact"):
        return
    for name in order:
        node = nodes[name]
        if node.kind == "pyp" and node.over == "word" and not pyp_lda_words(nodes, name, word):
            raise _err(f"node '{name}'", f"sampler '{sampler}' runs a Pitman-Yor word side of pyp-lda's shape only "
                                         "(phi[topic] over one corpus-level Dirichlet root or uniform vector); "
                                         "this one keeps the table indicators (\"sampler\": \"indicators\")")
        if node.mixture:
            raise _err(f"node '{name}'", f"sampler '{sampler}' does not run a mixture node; use \"sampler\": "
                                         "\"indicators\"")


def pyp_lda_words(nodes: dict, name: str, word) -> bool:
    """Whether node ``name`` is the word draw ``word``'s Pitman-Yor family indexed by [topic] over one corpus-level
    Dirichlet root or uniform vector (the reference indexed by corpus, no fallback)."""
    node = nodes[name]
    if word is None or word.node != name or word.index != ("topic",) or node.index != ("topic",) \
            or len(node.parents) != 1 or node.mixture:
        return False
    ref = node.parents[0]
    base = nodes[ref.node]
    return base.kind != "pyp" and base.index == ("corpus",) and ref.index == ("corpus",) and ref.if_missing is None \
        and not base.parents


def topological(nodes: dict) -> list[str]:
    """Parents before children; a cycle raises naming a node on it (intra-family previous-segment edges allowed)."""
    state: dict[str, int] = {}
    order: list[str] = []

    def edges(n):
        for r in _refs(nodes[n]):
            if not (r.node == n and "previous_segment" in r.index):
                yield r.node

    def visit(n, path):
        if state.get(n) == 2:
            return
        if state.get(n) == 1:
            cyc = path[path.index(n):] + [n]
            raise _err(f"node '{n}'", "cycle " + " -> ".join(cyc))
        state[n] = 1
        for p in edges(n):
            visit(p, path + [n])
        state[n] = 2
        order.append(n)

    for n in nodes:
        visit(n, [])
    return order


def ancestors(nodes: dict, start: set[str]) -> set[str]:
    """The nodes ``start`` reaches through parent references (itself included)."""
    seen, stack = set(), list(start)
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        stack.extend(r.node for r in _refs(nodes[n]))
    return seen
