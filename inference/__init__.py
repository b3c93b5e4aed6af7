"""Pure numerical kernels (numpy/numba, no Spark) shared by every model, and the mapper/reducer logic.

numba's on-disk cache is keyed on each function's own source file only: a kernel
in ``estep.py`` that inlines a helper from ``special.py`` would keep running the
old helper after ``special.py`` changes. ``_invalidate_stale_numba_cache`` drops
the package's cached machine code whenever any kernel source changed, so cached
and freshly compiled kernels (e.g. on executors importing a --py-files zip) are
always the same code and give bit-identical results.
"""
from __future__ import annotations

import hashlib
import os


def _invalidate_stale_numba_cache() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    cache = os.path.join(here, "__pycache__")
    try:
        sources = sorted(f for f in os.listdir(here) if f.endswith(".py"))
        digest = hashlib.sha256()
        for name in sources:
            with open(os.path.join(here, name), "rb") as f:
                digest.update(name.encode() + f.read())
        stamp = os.path.join(cache, "numba-sources.sha256")
        current = digest.hexdigest()
        if os.path.exists(stamp) and open(stamp).read() == current:
            return
        os.makedirs(cache, exist_ok=True)
        for name in os.listdir(cache):
            if name.endswith((".nbi", ".nbc")):
                os.remove(os.path.join(cache, name))
        with open(stamp, "w") as f:
            f.write(current)
    except OSError:  # read-only install or a zip import: numba compiles without the cache anyway
        pass


_invalidate_stale_numba_cache()
