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
# MAGIC All logic lives in the `deltasink` wheel (`pipelines.databricks.jobs.maintain`).

# COMMAND ----------

from pipelines.databricks import jobs

dbutils.widgets.text("config", "", "Pipeline config file (workspace path)")
dbutils.widgets.text("catalog", "", "Unity Catalog catalog (empty: the config's locations)")
dbutils.widgets.text("schema", "", "Schema in the catalog")
dbutils.widgets.text("volume", "", "Volume for checkpoints and Data Docs")
dbutils.widgets.text("bootstrap_servers", "", "Kafka bootstrap servers (empty: the config's)")
dbutils.widgets.text("secret_scope", "", "Secret scope of the config's databricks.secrets")
dbutils.widgets.text("retain_hours", "168", "VACUUM retention in hours (>= 168)")

# Fails fast, naming every missing or empty widget.
params = jobs.read_widgets(dbutils.widgets.get, jobs.MAINTENANCE_WIDGETS)

# COMMAND ----------

report = jobs.maintain(params, dbutils.secrets.get, spark=spark)
