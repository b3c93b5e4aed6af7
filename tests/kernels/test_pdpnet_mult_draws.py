"""The multiplicity samplers' kernels draw for draw (issue 28): :func:`cmgs_owned.hybrid_sweep`,
:func:`cmgs_owned_words.hybrid_word_sweep`, :func:`word_mult.mult_word_sweep` and
:func:`cmgs_shared_tokens.shared_token_sweep` under cmgs and exact (the wrong removal's switch once, a frozen phi, a
partition's own split of the word tables), a few cycles on the states of their own tests: a digest of every array
they move, recorded before their shared set-up was folded into helpers (:mod:`inference.pdpnet.mult_removal`,
cmgs_owned's ``doc_*`` steps and ``hybrid_cycle``, word_mult's ``word_*`` steps). A change that moves one draw
fails here; a deliberate one re-records them: ``python tests/kernels/test_pdpnet_mult_draws.py`` prints them."""
from __future__ import annotations

import hashlib
import json
import os
import sys

import numpy as np
import pytest

if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from drivers.models.pdp_network.engine_specs import SHIPPED  # noqa: E402
from inference.pdpnet.cmgs_owned import WRONG_REMOVAL, run_hybrid  # noqa: E402
from inference.pdpnet.cmgs_shared_tokens import run_shared_tokens  # noqa: E402
from tests.kernels import test_pdpnet_cmgs_owned as owned_case  # noqa: E402
from tests.kernels import test_pdpnet_hca_mult as hca_case  # noqa: E402
from tests.kernels import test_pdpnet_shared_tokens as tokens_case  # noqa: E402
from tests.kernels import test_pdpnet_word_mult as word_case  # noqa: E402
from tests.kernels.test_pdpnet_owned import HDP_PYP  # noqa: E402

COUNTS = ("n", "tc", "tp", "Nn", "TC", "TP", "Se", "mx")
#: recorded at d24a63b (before the fold), the same after it
DIGESTS = {
    "hca-cmgs": "53c5ccf4608ac827", "hca-exact": "631b949a598abac6",
    "hca-tiny-cmgs": "0feee78d3f8ab087", "hca-tiny-exact": "51a542781123653d",
    "hybrid-cmgs": "6fe95ce25fba10dd", "hybrid-cmgs-frozen": "1b6cc7a8554e919e",
    "hybrid-exact": "719f678f834fe7e4", "hybrid-exact-frozen": "6f89938587d359b3",
    "shared_tokens-cmgs": "267f757ead17d76d", "shared_tokens-cmgs-frozen": "b44c7e9f788c69b4",
    "shared_tokens-exact": "aa5557544065a11d", "shared_tokens-exact-frozen": "c6dfaebadeb82269",
    "word_mult-cmgs": "0e4ed046840a4487", "word_mult-cmgs-split": "76440d0ae0b9e10c",
    "word_mult-exact": "023a91ef8050f672", "word_mult-exact-split": "dd282edda8b258f2",
}


def digest(arrays) -> str:
    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(np.asarray(a))
        h.update(str(a.dtype).encode())
        h.update(str(a.shape).encode())
        h.update(a.tobytes())
    return h.hexdigest()[:16]


def _wrong(sampler, it, last):
    """The wrong removal's switch on the last cycle under exact (its branch drawn too)."""
    return WRONG_REMOVAL if it == last and sampler == "exact" else 0


def hybrid() -> dict:
    out = {}
    for sampler in ("cmgs", "exact"):
        for frozen in (False, True):
            rng = np.random.default_rng(3)
            docs = [[list(rng.integers(0, 9, rng.integers(2, 12)))] for _ in range(12)]
            lay, net, z, s, cnt, nwk, nk = owned_case._start(HDP_PYP, docs, 9, 4, sampler, "corpus")
            get = owned_case._tables(net.a_values)
            phi = np.random.default_rng(1).dirichlet(np.ones(9), 4).T if frozen else None
            for it in range(6):
                run_hybrid(net, z, s, cnt, net.a_values, net.b_values, nwk, nk, 0.1, phi, 40 + it, get,
                           _wrong(sampler, it, 5))
            out[f"hybrid-{sampler}" + "-frozen" * frozen] = digest([z, s, nwk, nk, *[cnt[k] for k in COUNTS],
                                                                    *cnt["own"][1:]])
    return out


def hca() -> dict:
    out = {}
    for sampler in ("cmgs", "exact"):
        raw = json.loads((SHIPPED / "hca.json").read_text())
        rng = np.random.default_rng(3)
        docs = [[list(rng.integers(0, 9, rng.integers(2, 12)))] for _ in range(12)]
        lay, net, z, s, cnt, word = hca_case._start(raw, docs, 9, 4, sampler)
        for it in range(8):
            hca_case._cycle(net, z, s, cnt, word, 40 + it, _wrong(sampler, it, 7))
        out[f"hca-{sampler}"] = digest([z, s, *[cnt[k] for k in COUNTS], *cnt["own"][1:], *word["tail"][:8]])
        lay, net, z, s, cnt, word = hca_case._start(hca_case.TINY_HCA, [[[0, 0]], [[0]]], 2, 2, sampler)
        for it in range(300):
            hca_case._cycle(net, z, s, cnt, word, 5 + it)
        out[f"hca-tiny-{sampler}"] = digest([z, s, *word["tail"][:8]])
    return out


def word_mult() -> dict:
    out = {}
    for sampler in ("cmgs", "exact"):
        for split in (False, True):
            docs, V, K, z, twk = word_case._random_state(5, V=4, K=3, ndocs=10)
            t1 = (twk > 0).astype(np.int64)
            own = None
            if split:                   # the others hold half the customers, and a table where this one has none
                nwk = np.zeros((V, K), np.int64)
                np.add.at(nwk, (np.concatenate([d[0] for d in docs]), z), 1)
                own_n = nwk - nwk // 2
                own = (own_n, np.minimum(t1, own_n))
            st = word_case.State(docs, V, K, z, t1, own=own, sampler=sampler)
            st.mx[:] = 1
            for it in range(8):
                st.sweep(7 + it, sampler == "exact", _wrong(sampler, it, 7))
            out[f"word_mult-{sampler}" + "-split" * split] = digest(
                [st.z, st.s, st.nloc, st.tloc, st.Nc, st.Tc, st.troot, st.Troot, st.own_n, st.own_t, st.mx])
    return out


def shared_tokens() -> dict:
    out = {}
    for sampler in ("cmgs", "exact"):
        for frozen in (False, True):
            rng = np.random.default_rng(2)
            docs = [[list(rng.integers(0, 7, rng.integers(2, 9)))] for _ in range(30)]
            lay, net, z, s, cnt, nwk, nk, stack = tokens_case._start(docs, 7, 4, sampler)
            phi = np.random.default_rng(1).dirichlet(np.ones(7), 4).T if frozen else None
            for it in range(8):
                run_shared_tokens(net, z, s, cnt, net.a_values, net.b_values, nwk, nk, 0.6, phi, 20 + it, stack,
                                  _wrong(sampler, it, 7))
            out[f"shared_tokens-{sampler}" + "-frozen" * frozen] = digest([z, s, nwk, nk, *[cnt[k] for k in COUNTS],
                                                                           cnt["own"][2]])
    return out


KERNELS = {"hybrid": hybrid, "hca": hca, "word_mult": word_mult, "shared_tokens": shared_tokens}


@pytest.mark.parametrize("kernel", sorted(KERNELS))
def test_the_kernels_draws_are_the_recorded_ones(kernel):
    got = KERNELS[kernel]()
    assert got == {name: DIGESTS[name] for name in got}


if __name__ == "__main__":
    print(json.dumps({k: v for f in KERNELS.values() for k, v in f().items()}, indent=1, sort_keys=True))
