"""Evaluation on Spark: held-out estimators and coherence for every family (``heldout``), what ``evaluate --json``
writes (``report``), left-to-right evaluation (``left_to_right``)."""
