"""Kernels compiled ahead (drivers/kernel_cache.py): the listed types read back as numba's, a listed signature
compiled into numba's cache (found there by ``record``), stale entries skipped, and the shipped list readable."""
from __future__ import annotations

import json

import numba
import pytest
from numba.core import types

from drivers import kernel_cache


@pytest.mark.parametrize("kind", [types.float64[:, ::1], types.int32[::1], types.uint64[:, :, ::1], types.int64,
                                  types.float32, types.boolean, types.uint8, types.int64[:],
                                  types.Array(types.float64, 2, "C", readonly=True)])
def test_a_type_reads_back_as_itself(kind):
    assert kernel_cache.parse_type(str(kind)) == kind


def test_a_type_the_list_cannot_hold_is_refused():
    with pytest.raises(ValueError, match="Literal"):
        kernel_cache.parse_type("Literal[int](3)")


def test_warm_compiles_what_is_listed_and_skips_what_no_longer_exists(tmp_path):
    listed = {"inference.special": {"trigamma": [["float64"]], "no_such_kernel": [["float64"]],
                                    "digamma": [["array(float64, 9d, C)"]]},
              "inference.no_such_module": {"f": [["int64"]]}}
    path = tmp_path / "signatures.json"
    path.write_text(json.dumps(listed))
    result = kernel_cache.warm(str(path), processes=2)
    assert result["compiled"] == 1 and result["skipped"] == 3, result
    assert any("no_such_module" in why for why in result["why"])
    # the compilation went to numba's cache beside the kernel, where record finds it
    found = kernel_cache.record(str(tmp_path / "recorded.json"))
    assert ["float64"] in found["inference.special"]["trigamma"]


def test_the_shipped_list_names_kernels_with_types_it_can_read():
    with open(kernel_cache.SIGNATURES) as f:
        listed = json.load(f)
    assert sum(len(s) for kernels in listed.values() for s in kernels.values()) > 50
    for module, kernels in listed.items():
        for name, signatures in kernels.items():
            for signature in signatures:
                assert all(isinstance(kernel_cache.parse_type(t), numba.core.types.Type) for t in signature)
