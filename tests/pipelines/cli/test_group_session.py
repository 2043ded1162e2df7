"""A group's one session: built from a pipeline on S3 when the group has one."""

from __future__ import annotations

from pathlib import Path

from pipelines.cli.group import session_config
from tests.support.configs import make_config


def test_a_group_session_comes_from_its_pipeline_on_s3_so_every_pipeline_reaches_s3(
        tmp_path: Path) -> None:
    local = make_config(tmp_path, "127.0.0.1:9092", "a", name="local_first")
    on_s3 = make_config(tmp_path, "127.0.0.1:9092", "b", name="on_s3",
                        checkpoint="s3a://bucket/_checkpoints/on_s3")
    assert session_config([local, on_s3]) is on_s3
    assert session_config([local]) is local
