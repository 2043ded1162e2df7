# Databricks notebook source
# MAGIC %md
# MAGIC # deltasink: validate the target table
# MAGIC
# MAGIC Validates the run recorded by the ingest task (`run_id`, passed as a task value): the
# MAGIC Great Expectations suite (unique and non-null `event_id`, schema columns present, required
# MAGIC fields non-null, no `event_time` too far in the future) on the partitions the run touched,
# MAGIC plus the run's quarantine share, and the Kafka lag / staleness when `max_lag_records` /
# MAGIC `max_staleness` are set. One row per expectation goes to the quality-results table;
# MAGIC the task **fails** when any expectation fails. `full = true` checks the whole table.
# MAGIC
# MAGIC All logic lives in the `deltasink` wheel (`pipelines.jobs.validate`).

# COMMAND ----------

from pipelines import jobs

dbutils.widgets.text("pipeline_name", "", "Pipeline name")
dbutils.widgets.text("bootstrap_servers", "", "Kafka bootstrap servers")
dbutils.widgets.text("topics", "", "Kafka topics (comma-separated)")
dbutils.widgets.text("target", "", "Target table (catalog.schema.table) or path")
dbutils.widgets.text("quarantine", "", "Quarantine table or path (optional)")
dbutils.widgets.text("checkpoint", "", "Checkpoint folder (UC Volume path)")
dbutils.widgets.text("quality_results", "", "Quality-results table or path")
dbutils.widgets.text("run_metrics", "", "Run-metrics table or path")
dbutils.widgets.text("quality_docs", "", "Data Docs folder (UC Volume path)")
dbutils.widgets.text("run_id", "", "Run to validate (the ingest task's run_id task value)")
dbutils.widgets.text("full", "false", "Validate the whole table: true | false")
dbutils.widgets.text("max_lag_records", "", "Fail above this Kafka lag in records (optional)")
dbutils.widgets.text("max_staleness", "", "Fail when records wait and the newest is older (optional)")

# Fails fast, naming every missing or empty widget.
params = jobs.read_widgets(dbutils.widgets.get, jobs.VALIDATE_WIDGETS)

# COMMAND ----------

report = jobs.validate(params, spark=spark)
