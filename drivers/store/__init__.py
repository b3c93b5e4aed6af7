"""What is stored and how: model directories (``model_store``), per-document outputs (``outputs``), model roots and
their versions (``model_root``), publishing a directory whole (``publish``, ``manifest``), one run per output
(``lease``)."""
