"""Write tests/golden/pyldavis_prepared.json: ``pyLDAvis.prepare(...).to_json()`` (pyLDAvis 3.4.1 from PyPI,
whose __version__ says 3.4.0; defaults but ``n_jobs=1``) of the inputs :func:`inputs` draws, for
``tests/kernels/test_topic_map.py`` to compare
``drivers.browse.pyldavis.prepared_data`` with. pyLDAvis is not a dependency: run this in an environment that has
it (``python -m venv V && V/bin/pip install pyLDAvis==3.4.1 && V/bin/python tests/bench/pyldavis_golden.py``)."""
from __future__ import annotations

import os

import numpy as np

GOLDEN = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "golden", "pyldavis_prepared.json")


def inputs():
    """(phi K x V, theta D x K, doc lengths, vocab): K = 6 topics over 120 words, 150 documents."""
    rng = np.random.default_rng(29)
    phi = rng.dirichlet(np.full(120, 0.1), size=6)
    theta = rng.dirichlet(np.full(6, 0.3), size=150)
    lengths = rng.integers(20, 200, 150)
    return phi, theta, lengths, np.array([f"t{i:03d}" for i in range(120)])


if __name__ == "__main__":
    import pyLDAvis

    phi, theta, lengths, vocab = inputs()
    prepared = pyLDAvis.prepare(phi, theta, lengths, list(vocab), np.ones(len(vocab)), n_jobs=1)
    with open(GOLDEN, "w") as f:
        f.write(prepared.to_json())
    print(f"wrote {GOLDEN} (pyLDAvis {pyLDAvis.__version__})")
