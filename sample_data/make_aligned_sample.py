"""Build ``sample_data/bible_en_es.jsonl.gz``: aligned English/Spanish Bible chapters.

English: the World English Bible (SWORD module ``engWEB2015eb``, Debian
``sword-text-web``). Spanish: the Reina-Valera 1909 (``spaRV1909eb``, Debian
``sword-text-sparv``). Both are in the public domain. One JSON line per chapter
and language, ``{"id": "Matt.5", "lang": "en", "text": "..."}``; the two texts
of a chapter share the id, so ``prepare --lang-column lang`` makes them one
tuple. The books kept (the New Testament and Genesis, Exodus, Psalms, Proverbs,
Isaiah) keep the file small.

    apt-get install -y sword-text-web sword-text-sparv libsword-utils
    python sample_data/make_aligned_sample.py
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_sample import BOOKS, chapters, dump_module, write_jsonl_gz  # noqa: E402

MODULES = {"en": "engWEB2015eb", "es": "spaRV1909eb"}
KEEP = set(BOOKS[BOOKS.index("Matt"):]) | {"Gen", "Exod", "Ps", "Prov", "Isa"}


def main() -> int:
    out = Path(__file__).with_name("bible_en_es.jsonl.gz")
    by_lang = {lang: {d["id"]: d["text"] for d in chapters(dump_module(module))}
               for lang, module in MODULES.items()}
    docs = []
    for book in BOOKS:
        if book not in KEEP:
            continue
        chapter = 1
        while f"{book}.{chapter}" in by_lang["en"] or f"{book}.{chapter}" in by_lang["es"]:
            key = f"{book}.{chapter}"
            for lang in MODULES:
                if key in by_lang[lang]:
                    docs.append({"id": key, "lang": lang, "text": by_lang[lang][key]})
            chapter += 1
    write_jsonl_gz(docs, out)
    print(f"wrote {len(docs)} chapter texts to {out} ({out.stat().st_size / 1e6:.2f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
