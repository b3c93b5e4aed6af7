"""``browse``: a model's topic browser site (:mod:`drivers.browse.site`), or pyLDAvis' prepared data
(:mod:`drivers.browse.pyldavis`), published whole at the output (:mod:`drivers.store.publish`)."""
from __future__ import annotations

import logging
import time

from drivers import storage
from drivers.browse import data as site_data, site
from drivers.corpora.files import CORPUS_JSON
from drivers.store import model_root, publish
from inference.errors import UsageError

log = logging.getLogger("spark_topics.browse")

FORMATS = ("site", "pyldavis")


def refuse_output_that_holds_data(output: str) -> None:
    """The site must not replace a model directory, a model root or a prepared corpus."""
    for marker, what in (("model.json", "a model directory"), (model_root.LATEST, "a model root"),
                         ("versions", "a model root"), (CORPUS_JSON, "a prepared corpus")):
        if storage.exists(storage.join(output, marker)):
            raise UsageError(f"spark-topics browse: --output {output} is {what} ({marker}); give the site a folder "
                             f"of its own")


def build(model: str, output: str, version: str | None = None, fmt: str = "site", top_docs: int = 10,
          coherence: bool = True) -> dict:
    """Write the site (or pyLDAvis' data) of the model at ``model`` (a directory or a model root) to ``output``;
    returns what was written."""
    if fmt not in FORMATS:
        raise UsageError(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    if not isinstance(top_docs, int) or top_docs < 1:
        raise UsageError(f"--top-docs must be a positive whole number, got {top_docs!r}")
    refuse_output_that_holds_data(output)
    start = time.perf_counter()
    with publish.published(output, "spark-topics browse", site.is_site_file) as staging:
        if fmt == "pyldavis":
            from drivers.browse import pyldavis

            files = pyldavis.write(model, staging, version)
            topics = None
        else:
            data = site_data.collect(model, version, top_docs=top_docs, coherence=coherence)
            files = site.write_site(data, staging)
            topics = len(data.topics)
    return {"output": output, "format": fmt, "files": len(files), "topics": topics,
            "seconds": round(time.perf_counter() - start, 2),
            "open": storage.join(output, "pyldavis.html" if fmt == "pyldavis" and "pyldavis.html" in files
                                 else "pyldavis.json" if fmt == "pyldavis" else "index.html")}
