"""Refreshing a model root with new documents: the update (``update``), what a root reads from outside itself
(``sources``)."""
