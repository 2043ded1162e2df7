# Databricks notebook source
# MAGIC %md
# MAGIC # deltasink: table maintenance
# MAGIC
# MAGIC 1. `OPTIMIZE` the target, quarantine, quality-results and run-metrics tables (compaction).
# MAGIC 2. `VACUUM` them, keeping `retain_hours` of history (at least 168 h: retried batches,
# MAGIC    pinned validation snapshots and recovery / time travel within Kafka's replay horizon
# MAGIC    still need older files; see `pipelines/ops/maintenance.py`).
# MAGIC 3. Validate the **whole** target table (uniqueness of `event_id` included); the task fails
# MAGIC    if any expectation fails.
# MAGIC
# MAGIC All logic lives in the `deltasink` wheel (`pipelines.jobs.maintain`).

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
dbutils.widgets.text("retain_hours", "168", "VACUUM retention in hours (>= 168)")

# Fails fast, naming every missing or empty widget.
params = jobs.read_widgets(dbutils.widgets.get, jobs.MAINTENANCE_WIDGETS)

# COMMAND ----------

report = jobs.maintain(params, spark=spark)
