"""The Gibbs family: models sampled on the Gibbs engine (the family in ``family``), its settings (``settings``),
constructing and opening its models (``models``), inference and evaluation (``infer``, ``evaluate``)."""
