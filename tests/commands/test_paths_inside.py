"""Paths read from a model, a model root, a corpus or a saved ML stage stay inside their directory (issue 25):
``storage.join_inside`` and the readers that use it (no Spark)."""
from __future__ import annotations

import json

import pytest

from drivers import storage
from drivers.storage import OutsideDirectory, join_inside
from drivers.corpora import tokenizer
from drivers.store import model_root, model_store


@pytest.mark.parametrize("name", ["../../../../etc/passwd", "a/../../b", "/etc/passwd", "file:/etc/passwd",
                                  "hdfs://nn/x", "~/x", "C:x", "..\\..\\x", "", "/", None, 3, ["x"], "a\x00b"])
def test_a_name_that_leaves_its_directory_is_refused_in_one_line(tmp_path, name):
    with pytest.raises(OutsideDirectory, match="is not a path inside it: refused") as info:
        join_inside(str(tmp_path), name)
    assert "\n" not in str(info.value)


def test_a_name_inside_is_joined_and_a_symbolic_link_out_is_refused(tmp_path):
    (tmp_path / "model").mkdir()
    (tmp_path / "secret.txt").write_text("secret")
    (tmp_path / "model" / "stopwords.txt").symlink_to(tmp_path / "secret.txt")
    (tmp_path / "model" / "sub").mkdir()
    (tmp_path / "model" / "inner.txt").write_text("x")
    (tmp_path / "model" / "link.txt").symlink_to("inner.txt")                   # a link inside: fine
    model = str(tmp_path / "model")
    assert join_inside(model, "sub/file.txt") == f"{model}/sub/file.txt"
    assert join_inside(model + "/", "link.txt") == f"{model}/link.txt"
    assert join_inside("hdfs://nn/models/m", "stopwords.txt") == "hdfs://nn/models/m/stopwords.txt"
    with pytest.raises(OutsideDirectory, match="a symbolic link to"):
        join_inside(model, "stopwords.txt")


class _Model:
    def __init__(self, directory):
        self.directory, self.meta = directory, {}


def test_tokenizer_stopwords_file_outside_the_model_is_refused(tmp_path):
    """tokenizer.json's stopwords_file named /etc/passwd through ``..`` (today: read as the stop words)."""
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "stopwords.txt").write_text("the\n")
    settings = tmp_path / "m" / tokenizer.TOKENIZER
    settings.write_text(json.dumps({"": {"stopwords_file": "stopwords.txt"}}))
    assert tokenizer.raw_text_options(_Model(str(tmp_path / "m")))["stopwords"].endswith("/m/stopwords.txt")
    settings.write_text(json.dumps({"": {"stopwords_file": "../../../../etc/passwd"}}))
    with pytest.raises(OutsideDirectory, match="tokenizer.json's stopwords_file '../../../../etc/passwd'"):
        tokenizer.raw_text_options(_Model(str(tmp_path / "m")))


def test_a_language_in_model_json_cannot_name_a_file_outside(tmp_path):
    with pytest.raises(OutsideDirectory):
        model_store._read(str(tmp_path), "vocab.x/../../../etc.parquet", storage.read_bytes)


def test_a_model_root_version_that_is_a_symbolic_link_out_is_refused(tmp_path):
    """A root handed over with versions/<v> linking to another model: refused, not read."""
    other = tmp_path / "other"
    other.mkdir()
    (other / "model.json").write_text("{}")
    root = tmp_path / "root"
    (root / model_root.VERSIONS).mkdir(parents=True)
    version = "000001-20260101T000000Z"
    (root / model_root.VERSIONS / version).symlink_to(other)
    (root / model_root.LATEST).write_text(version + "\n")
    with pytest.raises(OutsideDirectory, match="a version '000001-20260101T000000Z' leads outside"):
        model_root.resolve(str(root))
