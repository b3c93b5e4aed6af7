"""Pure numerical kernels (numpy/numba, no Spark) shared by every model, and the mapper/reducer logic.

numba's on-disk cache is keyed on each function's own source file only: a kernel
in ``estep.py`` that inlines a helper from ``special.py`` would keep running the
old helper after ``special.py`` changes. ``_invalidate_stale_numba_cache`` drops
the package's cached machine code whenever any kernel source changed, so cached
and freshly compiled kernels (e.g. on executors importing a --py-files zip) are
always the same code and give bit-identical results. A model's own kernels live in its
home under ``drivers/models/`` (and inline helpers of this package), so that tree is
digested and cleared with this one.
"""
from __future__ import annotations

import hashlib
import os


def _invalidate_stale_numba_cache() -> None:
    """Drop numba's cached machine code under ``inference/`` and ``drivers/models/`` (subpackages included) when
    any source of either changed."""
    here = os.path.dirname(os.path.abspath(__file__))
    project = os.path.dirname(here)
    try:
        sources, caches = [], []
        for tree in (here, os.path.join(project, "drivers", "models")):
            for root, dirs, files in os.walk(tree):
                dirs[:] = sorted(d for d in dirs if d != "__pycache__")
                caches.append(os.path.join(root, "__pycache__"))
                sources += [os.path.join(root, f) for f in sorted(files) if f.endswith(".py")]
        digest = hashlib.sha256()
        for path in sources:
            with open(path, "rb") as f:
                digest.update(os.path.relpath(path, project).encode() + f.read())
        stamp = os.path.join(here, "__pycache__", "numba-sources.sha256")
        current = digest.hexdigest()
        if os.path.exists(stamp) and open(stamp).read() == current:
            return
        for cache in caches:
            if os.path.isdir(cache):
                for name in os.listdir(cache):
                    if name.endswith((".nbi", ".nbc")):
                        os.remove(os.path.join(cache, name))
        os.makedirs(os.path.dirname(stamp), exist_ok=True)
        with open(stamp, "w") as f:
            f.write(current)
    except OSError:  # read-only install or a zip import: numba compiles without the cache anyway
        pass


_invalidate_stale_numba_cache()
