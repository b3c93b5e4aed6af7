"""Where stages saved by earlier versions find their classes: their ``metadata`` names ``drivers.ml.SparkTopicsLDA``
or ``drivers.ml.SparkTopicsLDAModel``, which ``Pipeline.load`` and ``PipelineModel.load`` import by that name. The
API lives in :mod:`drivers.api`."""
from drivers.api import SparkTopicsLDA, SparkTopicsLDAModel  # noqa: F401
