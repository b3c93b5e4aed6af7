"""The variational family: models fitted by variational EM (the model protocol and the family: ``family``), inference
and evaluation of its models (``infer``, ``evaluate``), refresh (``refresh``), what train and refresh share
(``shared``)."""
