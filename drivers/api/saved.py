"""Reading a saved spark-topics Spark ML stage (:mod:`drivers.api.model`): its ``metadata`` refused in one line
naming it when it is not a stage's (garbage, truncated, not JSON), and a model stage's params checked against the model
directory its ``data`` names (a stage saying ``k = 99`` beside a 3-topic model is refused, not loaded)."""
from __future__ import annotations

from pyspark.ml.util import DefaultParamsReader

from drivers import storage
from drivers.failures import one_line
from inference.errors import DamagedError


def stage_metadata(path: str, spark, who: str) -> dict:
    """The saved stage's metadata (``path/metadata``), or a one-line DamagedError naming that file."""
    try:
        metadata = DefaultParamsReader.loadMetadata(path, spark)
        if not isinstance(metadata, dict) or not isinstance(metadata.get("uid"), str):
            raise ValueError("no uid: not a saved stage's metadata")
    except Exception as exc:  # JSONDecodeError, an empty or missing file (Spark), a JSON that is not an object
        raise DamagedError(f"{who}: cannot read the saved stage's metadata {storage.join(path, 'metadata')}: "
                           f"{one_line(exc)}") from None
    return metadata


class CheckedParamsReader(DefaultParamsReader):
    """``DefaultParamsReader`` whose unreadable metadata is refused in one line naming the file."""

    def load(self, path: str):
        stage_metadata(path, self.sparkSession, f"{self.cls.__name__}.load")
        return super().load(path)


def check_model_stage(metadata: dict, stage, model, path: str, who: str) -> None:
    """Refuse a saved model stage whose params (``k``) or metadata (``topics``, ``vocabSize``) disagree with the
    model directory it loaded: its parts are of different models, or the metadata was edited."""
    K, V = int(model.num_topics), int(model.lambda_.shape[1])
    said = {"k": stage.getK(), "topics": metadata.get("topics", K), "vocabSize": metadata.get("vocabSize", V)}
    for name, value in said.items():
        if value != (V if name == "vocabSize" else K):
            raise DamagedError(f"{who}: {storage.join(path, 'metadata')} says {name} = {value!r}, but the model it "
                               f"names ({model.directory}) has {K} topics and {V} terms: the saved stage is damaged "
                               f"(its metadata and data are not of one model); save the model again")
