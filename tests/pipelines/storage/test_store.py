"""Reading named files through Spark: exactly the names asked for, each looked up by itself."""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import SparkSession

from pipelines.storage.store import Store, named


def test_several_names_are_one_literal_path_each_so_hadoop_does_not_list_the_folder() -> None:
    # A brace that holds a "/" is expanded by Hadoop into one pattern per alternative, and a
    # pattern without wildcards is looked up by itself; "folder/{a,b}" would list the folder.
    assert named("/lake/t/_delta_log", ["00.json", "01.json"]) == \
        "/lake/t/{_delta_log/00.json,_delta_log/01.json}"
    assert named("s3a://bucket/t/_delta_log/", ["a,b.json", "c"]) == \
        r"s3a://bucket/t/{_delta_log/a\,b.json,_delta_log/c}"
    assert named("/lake/we[i]rd/log", ["x", "y"]) == r"/lake/we\[i\]rd/{log/x,log/y}"
    # Escaped inside the braces such a name matched nothing: that folder keeps the listing.
    assert named("/lake/we[i]rd", ["x", "y"]) == r"/lake/we\[i\]rd/{x,y}"
    assert named("/lake/t/_delta_log", ["one.json"]) == "/lake/t/_delta_log/one.json"


def test_read_many_returns_the_named_files_that_exist_and_nothing_else(
        spark: SparkSession, tmp_path: Path) -> None:
    folder = tmp_path / "t" / "_delta_log"
    folder.mkdir(parents=True)
    for i in range(200):
        (folder / f"{i:020d}.json").write_text(f"v{i}")
    wanted = [f"{i:020d}.json" for i in (7, 199, 200, 201)]
    read = Store(spark).read_many(str(folder), wanted)
    assert {name: text for name, (text, _) in read.items()} == {
        f"{7:020d}.json": "v7", f"{199:020d}.json": "v199"}
    assert Store(spark).read_many(str(folder), ["missing-a", "missing-b"]) == {}
    weird = tmp_path / "we[i]rd"  # read through the listing: the same answer
    weird.mkdir()
    (weird / "1.json").write_text("one")
    read = Store(spark).read_many(str(weird), ["1.json", "2.json"])
    assert {name: text for name, (text, _) in read.items()} == {"1.json": "one"}


def test_stamps_name_the_files_that_exist_without_reading_them(
        spark: SparkSession, tmp_path: Path) -> None:
    for name in ("a.json", "b.json"):
        (tmp_path / name).write_text("x")
    stamps = Store(spark).stamps(str(tmp_path), ["a.json", "b.json", "c.json"])
    assert sorted(stamps) == ["a.json", "b.json"]
    assert stamps["a.json"] == Store(spark).modified_ms(str(tmp_path / "a.json"))


def test_a_folder_holds_files_only_when_spark_would_read_one(
        spark: SparkSession, tmp_path: Path) -> None:
    store = Store(spark)
    assert not store.holds_files(str(tmp_path / "missing"))
    log = tmp_path / "_delta_log"
    log.mkdir()
    assert not store.holds_files(str(log))  # an empty log folder is no table yet
    (log / "_last_checkpoint").write_text("{}")  # a name Spark leaves out
    assert not store.holds_files(str(log))
    (log / f"{0:020d}.json").write_text("{}")
    assert store.holds_files(str(log))
