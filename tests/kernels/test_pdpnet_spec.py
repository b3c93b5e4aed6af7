"""The network spec (issue 28, 1): validation with one-line errors naming the node, the compiled arrays, the
shipped specs."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest

from inference.errors import UsageError
from inference.pdpnet.compile import KIND_DIRICHLET, KIND_PYP, CorpusLayout, compile_network
from inference.pdpnet.spec import load_network, parse_network

SHIPPED = Path(__file__).resolve().parents[2] / "sample_data" / "networks"

STM = {"parameters": {"b_seg": {"kind": "b", "value": 10.0, "sample": True}},
       "nodes": {"doc": {"index": ["document"], "over": "topic", "dirichlet": 0.1},
                 "seg": {"index": ["segment"], "over": "topic", "pyp": {"a": 0.0, "b": "b_seg"},
                         "parents": [{"node": "doc", "index": ["document"]}]},
                 "phi": {"index": ["topic"], "over": "word", "dirichlet": 0.01}},
       "topic": {"node": "seg", "index": ["segment"]},
       "word": {"node": "phi", "index": ["topic"]}}


def _with(edit):
    spec = copy.deepcopy(STM)
    edit(spec)
    return spec


BAD = [
    ("cycle", lambda s: s["nodes"]["doc"].update(dirichlet=None) or s["nodes"].update(
        doc={"index": ["document"], "over": "topic", "pyp": {"a": 0, "b": 1},
             "parents": [{"node": "seg2", "index": ["document"]}]},
        seg2={"index": ["document"], "over": "topic", "pyp": {"a": 0, "b": 1},
              "parents": [{"node": "doc", "index": ["document"]}]}),
     "node 'doc': cycle doc -> seg2 -> doc"),
    ("unknown index kind", lambda s: s["nodes"]["seg"].update(index=["author"]),
     "node 'seg': unknown index 'author' in its index"),
    ("index not known at the child", lambda s: s["nodes"]["seg"]["parents"][0].update(index=["topic"]),
     "node 'seg': 'doc' expects a document index, the reference gives 'topic'"),
    ("expression not derivable", lambda s: s["nodes"].update(
        doc={"index": ["segment"], "over": "topic", "dirichlet": 0.1}) or s["nodes"]["seg"].update(
        index=["document"]) or s["nodes"]["seg"]["parents"][0].update(index=["segment"])
        or s["topic"].update(index=["document"]),
     "node 'seg': unknown index 'segment' for 'doc': not known from ['document']"),
    ("no data path", lambda s: s["nodes"].update(orphan={"index": ["corpus"], "over": "word", "dirichlet": 1}),
     "node 'orphan': no data path"),
    ("unknown parent", lambda s: s["nodes"]["seg"]["parents"][0].update(node="mu"),
     "node 'seg': unknown node 'mu'"),
    ("topics over words", lambda s: s["nodes"]["seg"]["parents"][0].update(node="phi", index=["topic"]),
     "node 'seg': 'phi' is over words"),
    ("discount out of range", lambda s: s["nodes"]["seg"]["pyp"].update(a=1.2),
     "node 'seg': discount seg.a = 1.2 must be in [0, 1)"),
    ("undeclared parameter", lambda s: s["nodes"]["seg"]["pyp"].update(b="b_doc"),
     "node 'seg': b names the parameter 'b_doc', which 'parameters' does not declare"),
    ("root with parents", lambda s: s["nodes"]["doc"].update(parents=[{"node": "seg", "index": ["segment"]}]),
     "node 'doc': a dirichlet root has no parents"),
    ("two kinds", lambda s: s["nodes"]["doc"].update(uniform=True),
     "node 'doc': give exactly one of"),
    ("first segment without a parent", lambda s: s["nodes"]["seg"].update(
        parents=[{"node": "seg", "index": ["previous_segment"]}]),
     "node 'seg': has no parent at a document's first segment (give 'if_missing')"),
    ("topic draw indexed by topic", lambda s: s["topic"].update(node="phi"),
     "the topic draw: 'phi' is over words"),
]


@pytest.mark.parametrize("what,edit,message", BAD, ids=[b[0] for b in BAD])
def test_invalid_specs_are_refused_in_one_line_naming_the_node(what, edit, message):
    with pytest.raises(UsageError) as info:
        parse_network(_with(edit))
    text = str(info.value)
    assert "\n" not in text and message in text, text


def test_load_network_names_the_file_for_bad_json(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{nodes: 1}")
    with pytest.raises(UsageError, match=r"network spec .*bad.json: not JSON"):
        load_network(bad)
    with pytest.raises(UsageError, match="cannot read it"):
        load_network(tmp_path / "missing.json")


def test_compiled_stm_graph():
    """Instances, parents first, one edge per segment to its document, cells, token draws."""
    docs = [[[0, 1], [2]], [[1, 1, 3]]]
    net = compile_network(parse_network(STM), CorpusLayout.of(docs, 4), 3)
    # doc x2, seg x3, phi x3, in topological order (doc, seg, phi or phi first: roots before children)
    names = [net.spec.order[f] for f in net.family]
    assert names.count("doc") == 2 and names.count("seg") == 3 and names.count("phi") == 3
    seg_ids = [j for j, n in enumerate(names) if n == "seg"]
    doc_ids = [j for j, n in enumerate(names) if n == "doc"]
    assert [int(net.par_node[net.par_ptr[j]]) for j in seg_ids] == [doc_ids[0], doc_ids[0], doc_ids[1]]
    assert np.all(np.diff(net.par_ptr)[seg_ids] == 1) and np.all(net.par_node < np.repeat(
        np.arange(net.num_nodes), np.diff(net.par_ptr)))
    assert list(net.kind[seg_ids]) == [KIND_PYP] * 3 and list(net.kind[doc_ids]) == [KIND_DIRICHLET] * 2
    assert net.num_cells == 2 * 3 + 3 * 3 + 3 * 4
    assert list(net.topic_inst) == [seg_ids[0]] * 2 + [seg_ids[1]] + [seg_ids[2]] * 3
    phi_ids = [j for j, n in enumerate(names) if n == "phi"]
    assert np.array_equal(net.word_inst, np.tile(phi_ids, (6, 1)))
    text = net.describe()
    assert "seg[segment] over topics: 3 vectors, PYP(a=0 fixed, b=10 sampled 'b_seg') over doc[document]" in text


def test_compiled_seqlda_and_adatm_chains():
    """previous_segment: SeqLDA's first segment falls back to the document, AdaTM's later segments have two
    parents (previous segment first, document second), the first only the document."""
    docs = [[[0], [1], [2]], [[3]]]
    lay = CorpusLayout.of(docs, 4)
    seq = compile_network(load_network(SHIPPED / "seqlda.json"), lay, 2)
    ada = compile_network(load_network(SHIPPED / "adatm.json"), lay, 2)
    for net, expect in ((seq, [["doc"], ["seg"], ["seg"], ["doc"]]),
                        (ada, [["doc"], ["seg", "doc"], ["seg", "doc"], ["doc"]])):
        names = [net.spec.order[f] for f in net.family]
        segs = [j for j, n in enumerate(names) if n == "seg"]
        got = [[names[net.par_node[e]] for e in range(net.par_ptr[j], net.par_ptr[j + 1])] for j in segs]
        assert got == expect
        # the previous segment of segment 2 is segment 1
        assert net.par_node[net.par_ptr[segs[2]]] == segs[1]


def test_hierarchy_over_previous_word_instances_only_where_reached():
    """A bigram-topic word side phi[topic, previous_word] over psi[topic]: only the contexts that occur."""
    spec = {"nodes": {"theta": {"index": ["document"], "over": "topic", "dirichlet": 0.1},
                      "psi": {"index": ["topic"], "over": "word", "dirichlet": 0.1},
                      "phi": {"index": ["topic", "previous_word"], "over": "word", "pyp": {"a": 0.5, "b": 1.0},
                              "parents": [{"node": "psi", "index": ["topic"]}]}},
            "topic": {"node": "theta", "index": ["document"]},
            "word": {"node": "phi", "index": ["topic", "previous_word"]}}
    net = compile_network(parse_network(spec), CorpusLayout.of([[[0, 1, 0]], [[2]]], 5), 2)
    names = [net.spec.order[f] for f in net.family]
    # contexts: start (5) for tokens 0 and 3, word 0 for token 1, word 1 for token 2 -> 3 contexts x 2 topics
    assert names.count("phi") == 6 and names.count("psi") == 2


@pytest.mark.parametrize("path", sorted(SHIPPED.glob("*.json")), ids=lambda p: p.name)
def test_shipped_specs_validate_and_compile(path):
    spec = load_network(path)
    assert spec.name == path.stem
    json.loads(path.read_text())
    layout = CorpusLayout.of([[[0, 1], [2, 0]], [[1]]], 3)
    layout.columns = {name: (np.array([0, 2, 3]), np.array([0, 1, 1]), 3) for name in spec.lists}   # author lists
    net = compile_network(spec, layout, 2)
    assert net.describe().startswith(f"network '{spec.name}'")
