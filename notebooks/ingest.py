# Databricks notebook source
# MAGIC %md
# MAGIC # deltasink: ingest Kafka into Delta
# MAGIC
# MAGIC Streams the configured Kafka topics into the target Delta table, exactly once: bad records go
# MAGIC to the quarantine table, duplicates are dropped on `event_id`, every micro-batch commit is
# MAGIC idempotent. With `trigger = available-now` it drains what is in Kafka and stops (scheduled
# MAGIC job); with `trigger = continuous` it runs until cancelled (continuous job) and validates
# MAGIC what it wrote every `validate_every` (a failure with `on_failure = stop` fails the run).
# MAGIC
# MAGIC All logic lives in the `deltasink` wheel (`pipelines.jobs.ingest`). Widgets are set by the
# MAGIC task's `base_parameters` in `notebooks/resources/jobs.yml`. Kafka SASL credentials are read
# MAGIC from the secret scope named by `secret_scope` (keys `kafka-sasl-username`,
# MAGIC `kafka-sasl-password`) and are never printed. The run's per-batch metrics go to the
# MAGIC run-metrics table and its id is published as the task value `run_id` for the validate task.

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
dbutils.widgets.text("trigger", "available-now", "Trigger: available-now | continuous")
dbutils.widgets.text("interval", "10s", "Micro-batch interval (continuous)")
dbutils.widgets.text("secret_scope", "", "Secret scope with Kafka SASL credentials (optional)")
dbutils.widgets.text("sasl_mechanism", "PLAIN", "SASL mechanism")
dbutils.widgets.text("validate_every", "15m", "Continuous: validate every (15m, 20 batches)")
dbutils.widgets.text("on_failure", "continue", "Continuous: a failed validation does continue | stop")
dbutils.widgets.text("max_lag_records", "", "Fail above this Kafka lag in records (optional)")
dbutils.widgets.text("max_staleness", "", "Fail when records wait and the newest is older (optional)")

# Fails fast, naming every missing or empty widget.
params = jobs.read_widgets(dbutils.widgets.get, jobs.INGEST_WIDGETS)

# COMMAND ----------

result = jobs.ingest(params, secrets=dbutils.secrets.get, spark=spark,
                     task_values=dbutils.jobs.taskValues.set)
