"""Write a topic browser site: plain files that open from ``file://`` or any static host, no server and no
network.

::

    SITE/index.html           the page
    SITE/assets/app.js        its script and style sheet (ours, no library)
    SITE/assets/style.css
    SITE/data/model.js        the summary: model card, map, every topic's share and label
    SITE/data/topics/<k>.js   one topic's words, documents, related topics and family views, loaded when opened

Data files are JavaScript that hands its JSON to the page (``window.SPARK_TOPICS_MODEL = ...``,
``SPARK_TOPICS_TOPIC(...)``): a browser refuses ``fetch()`` of local files, but runs local scripts."""
from __future__ import annotations

import html
import json
import math
from importlib import resources

from drivers import storage

ASSETS = ("app.js", "style.css")
#: what a site directory holds (its own files, for the publication protocol)
SITE_FILES = ("index.html", "assets", "data", "pyldavis.json", "pyldavis.html")


def is_site_file(name: str) -> bool:
    return name in SITE_FILES


def _clean(value):
    """JSON-safe: non-finite floats become null (JSON has no NaN or infinity)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def script_json(value) -> str:
    """JSON that is safe inside a script file (no ``</`` sequence)."""
    return json.dumps(_clean(value), ensure_ascii=False, allow_nan=False, separators=(",", ":")).replace("</", "<\\/")


def asset(name: str) -> bytes:
    return resources.files("drivers.browse").joinpath("assets", name).read_bytes()


def write_site(data, directory: str) -> list[str]:
    """The site of ``data`` (:class:`drivers.browse.data.SiteData`) in ``directory``; returns the files written."""
    written = []

    def put(relative: str, content: bytes) -> None:
        storage.write_bytes(storage.join(directory, relative), content)
        written.append(relative)

    card = data.summary["card"]
    title = f"{card['model']} · {card['topics']} topics"
    if card.get("version"):
        title += f" · version {card['version']}"
    page = asset("index.html").decode("utf-8").replace("__TITLE__", html.escape(title))
    put("index.html", page.encode("utf-8"))
    for name in ASSETS:
        put(f"assets/{name}", asset(name))
    put("data/model.js", f"window.SPARK_TOPICS_MODEL = {script_json(data.summary)};\n".encode("utf-8"))
    for record in data.topics:
        put(f"data/topics/{record['k']}.js", f"SPARK_TOPICS_TOPIC({script_json(record)});\n".encode("utf-8"))
    return written
