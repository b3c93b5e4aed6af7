"""A revised document's old copy leaves a Gibbs model's kept partition (issue 30, item 2; drivers/families/gibbs/
revisions.py): the block loses the document, the state loses its tokens', segments' and document's entries by the
model's ``state_axes``, and the partition's counts are then those of the documents it keeps: the counts of the
whole partition minus those of the documents taken out, table by table, for every model whose chain continues."""
from __future__ import annotations

import numpy as np
import pytest

from drivers import registry
from drivers.engines.gibbs import state as gibbs_state
from drivers.families.gibbs.models import make_model
from drivers.families.gibbs.revisions import RevisedOut
from inference.errors import RefusedError
from inference.gibbs.block import SegmentedBlock
from inference.gibbs.tables import KeyedCounts, merge
from inference.tree_layout import TreeLayout

V, K = 12, 3
CASES = [("lda-gibbs", {}), ("lda-gibbs", {"segment_level": True}), ("stm", {}), ("seqlda", {}), ("adatm", {}),
         ("dp-mixture", {}), ("cluster-lda", {}), ("tlm", {}), ("tlda", {})]


def _block() -> SegmentedBlock:
    rng = np.random.default_rng(7)
    docs = [(f"d{i}", [rng.integers(0, V, rng.integers(2, 6)).tolist() for _ in range(rng.integers(1, 4))])
            for i in range(7)]
    return SegmentedBlock.from_segments(docs)


def _model(name, construction):
    if name == "tlda":
        model = make_model(registry.model("tlda", "gibbs"), K, V, registry)
        model.set_tree(TreeLayout(V, np.array([[0, 3], [1, 3], [2, 5]])))
    else:
        model = make_model(registry.MODELS[name], K, V, registry, **construction)
    hyper = model.initial_hyper()
    model.bind_hyper(hyper)
    return model, hyper


def _counts(model, orig, state) -> dict:
    item = gibbs_state.new_item(model, orig)
    model.check_state(item["block"], state)
    return model.table_counts(item["block"], state, (item["vocab_ids"], item["local"]))


def _same(table, a, b) -> bool:
    return a.equals(b) if isinstance(a, KeyedCounts) else np.array_equal(a, b)


@pytest.mark.parametrize("name,construction", CASES, ids=[c[0] + ("-segments" if c[1] else "") for c in CASES])
def test_the_kept_documents_count_what_the_partition_counted_less_the_revised_ones(name, construction):
    model, hyper = _model(name, construction)
    orig = _block()
    state = model.initial_state(model.prepare_block(orig), hyper, 5)
    whole = _counts(model, orig, state)
    revised = frozenset({"d1", "d4", "elsewhere"})
    keep = np.array([d not in revised for d in orig.doc_ids])
    kept_state, out_state = ({k: v.copy() for k, v in state.items()} for _ in range(2))
    take_out = RevisedOut(model, revised)
    kept = take_out(0, orig, kept_state)
    out = model.without_documents(orig, out_state, ~keep)
    assert list(kept.doc_ids) == [d for d in orig.doc_ids if d not in revised] and take_out.found == 2
    tokens = np.repeat(keep, np.diff(orig.token_ptr()))
    assert np.array_equal(kept.words, orig.words[tokens]) and take_out.tokens == int((~tokens).sum()) > 0
    assert take_out.documents == model.prepare_block(orig).n_docs - model.prepare_block(kept).n_docs >= 2
    for key, value in state.items():
        if model.state_axes[key] == "token":
            assert np.array_equal(kept_state[key], value[tokens]), key
    counted, removed = _counts(model, kept, kept_state), _counts(model, out, out_state)
    for table in model.count_tables():
        both = merge(table, [counted[table.name], removed[table.name]])
        assert _same(table, both, merge(table, [whole[table.name]])), table.name
        assert not _same(table, merge(table, [counted[table.name]]), merge(table, [whole[table.name]])), table.name
    untouched = {k: v.copy() for k, v in state.items()}
    assert RevisedOut(model, frozenset({"nowhere"}))(0, orig, untouched) is None
    assert all(np.array_equal(untouched[k], state[k]) for k in state)


def test_a_model_whose_state_seats_tables_over_the_partitions_words_refuses_a_revision():
    """pdp-network's word side seats tables per word of the partition: a revision is refused (one line). (Its
    state's keys, as its ``initial_state`` makes them, without running the sampler.)"""
    model = make_model(registry.MODELS["pdp-network"], K, V, registry)
    orig = _block()
    state = {"z": np.zeros(orig.n_tokens, np.int32), "s": np.zeros(0, np.int64),
             "word_t": np.zeros((len(np.unique(orig.words)), K), np.int32)}
    with pytest.raises(RefusedError, match="revised document"):
        RevisedOut(model, frozenset({"d1"}))(0, orig, state)
