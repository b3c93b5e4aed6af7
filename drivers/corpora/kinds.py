"""The kinds of prepared corpora a model may need (the registry's ``ModelSpec.corpus``: what ``spark-topics prepare``
must have written)."""
BAG_OF_WORDS = "bag of words"                  # docs.parquet
SEGMENTED = "ordered segments"                 # prepare --segments (segments.parquet)
ALIGNED = "aligned languages"                  # prepare --lang-column (one sub-corpus per language)
ORDERED = "ordered tokens"                     # prepare --ordered (every document's tokens in text order)
