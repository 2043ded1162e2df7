"""bench.eventlog: a Spark event log summarized job by job, Kafka-reading stages flagged."""

from __future__ import annotations

import json
from pathlib import Path

from bench.eventlog import read, render


def _stage(stage_id: int, rdds: list[str], cpu_ns: int) -> dict[str, object]:
    return {"Event": "SparkListenerStageCompleted", "Stage Info": {
        "Stage ID": stage_id, "Number of Tasks": 3, "Submission Time": 1_000,
        "Completion Time": 3_000, "RDD Info": [{"Name": n} for n in rdds],
        "Accumulables": [{"Name": "internal.metrics.executorRunTime", "Value": 4_000},
                         {"Name": "internal.metrics.executorCpuTime", "Value": cpu_ns}]}}


def test_jobs_and_kafka_stages_are_reported(tmp_path: Path) -> None:
    events = [
        {"Event": "SparkListenerJobStart", "Job ID": 1, "Submission Time": 1_000,
         "Stage IDs": [10], "Properties": {"spark.job.description": "deltasink-x\nid = 1"}},
        _stage(10, ["MapPartitionsRDD", "DataSourceRDD"], 2_000_000_000),
        {"Event": "SparkListenerJobEnd", "Job ID": 1, "Completion Time": 3_500},
        {"Event": "SparkListenerJobStart", "Job ID": 2, "Submission Time": 4_000,
         "Stage IDs": [11, 12], "Properties": {}},
        _stage(11, ["ShuffledRowRDD"], 500_000_000),  # stage 12 was skipped: never completes
        {"Event": "SparkListenerJobEnd", "Job ID": 2, "Completion Time": 5_000},
    ]
    log = tmp_path / "events_1_app"
    log.write_text("\n".join(json.dumps(e) for e in events) + "\n")
    jobs, stages = read(tmp_path)
    assert [j.job_id for j in jobs] == [1, 2]
    assert stages[10].reads_kafka and not stages[11].reads_kafka
    text = render(jobs, stages)
    lines = text.splitlines()
    assert "'deltasink-x'" in lines[0] and "KAFKA" in lines[0] and "2.50s" in lines[0]
    assert "KAFKA" not in lines[1]
    assert lines[-1] == "2 jobs, 2.5 s task CPU in all"
