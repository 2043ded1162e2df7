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
# MAGIC All logic lives in the `deltasink` wheel (`pipelines.databricks.jobs.validate`).

# COMMAND ----------

from pipelines.databricks import jobs

dbutils.widgets.text("config", "", "Pipeline config file (workspace path)")
dbutils.widgets.text("catalog", "", "Unity Catalog catalog (empty: the config's locations)")
dbutils.widgets.text("schema", "", "Schema in the catalog")
dbutils.widgets.text("volume", "", "Volume for checkpoints and Data Docs")
dbutils.widgets.text("bootstrap_servers", "", "Kafka bootstrap servers (empty: the config's)")
dbutils.widgets.text("secret_scope", "", "Secret scope of the config's databricks.secrets")
dbutils.widgets.text("run_id", "", "Run to validate (the ingest task's run_id task value)")
dbutils.widgets.text("full", "false", "Validate the whole table: true | false")
dbutils.widgets.text("max_lag_records", "", "Kafka lag limit in records (empty: the config's)")
dbutils.widgets.text("max_staleness", "", "Staleness limit (empty: the config's)")

# Fails fast, naming every missing or empty widget.
params = jobs.read_widgets(dbutils.widgets.get, jobs.VALIDATE_WIDGETS)

# COMMAND ----------

report = jobs.validate(params, dbutils.secrets.get, spark=spark)
