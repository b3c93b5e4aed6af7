"""Evaluation on Spark: held-out estimators and coherence for every family (``heldout``), what ``evaluate --json``
writes (``report``)."""
