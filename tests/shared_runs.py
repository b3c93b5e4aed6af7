"""What the pytest-xdist workers of one test run share: folders made once, by whichever worker needs them first,
while the other waits (an ``flock`` beside the folder), and read by both.

:class:`TinyModels` is every registered model trained on the tiny corpora (:mod:`tiny_corpora`) with its family's
flags (``FAMILY_FLAGS``): the conformance suite, browse, evaluate and infer tests read the same models instead of
training their own. Tests read them and write elsewhere."""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pathlib


def run_folder(tmp_path_factory) -> pathlib.Path:
    """A folder of this test run that every pytest-xdist worker sees (a worker's base temp is a folder in it)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@contextlib.contextmanager
def made_once(path: pathlib.Path, wait: bool = True):
    """Yield True when the caller is to make ``path`` now, False when a worker already made it, None when another
    worker is making it and ``wait`` is False. The make is recorded only when the block ends without an exception
    (a failed make is retried by the next caller)."""
    done = path.with_name(path.name + ".done")
    with open(path.with_name(path.name + ".lock"), "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield None
            return
        if done.exists():
            yield False
            return
        yield True
        done.touch()


class TinyModels:
    """name -> model directory of that registered model trained on its kind's tiny corpus (trained on first
    request, once per test run)."""

    def __init__(self, spark, corpora: dict, folder: pathlib.Path):
        self.spark, self.corpora, self.folder = spark, corpora, folder
        folder.mkdir(exist_ok=True)

    def __getitem__(self, name: str) -> str:
        return self._made(name, wait=True)

    def every(self, names) -> dict:
        """name -> directory of each of ``names``: first the models no other worker is training (two workers that
        need them all train half each), then those, once the other worker has them."""
        out = {name: self._made(name, wait=False) for name in names}
        return {name: path or self[name] for name, path in out.items()}

    def _made(self, name: str, wait: bool) -> str | None:
        from conftest import train_args
        from drivers import registry
        from jobs.train import train
        from tiny_corpora import FAMILY_FLAGS

        spec = registry.model(name)
        path = self.folder / name
        with made_once(path, wait) as make:
            if make is None:
                return None
            if make:
                train(self.spark, train_args(self.corpora[spec.corpus], path, "--model", name,
                                             *FAMILY_FLAGS[spec.family]))
        return str(path)

    def meta(self, name: str) -> dict:
        """The model's model.json (what ``train`` returned)."""
        with open(os.path.join(self[name], "model.json")) as f:
            return json.load(f)
