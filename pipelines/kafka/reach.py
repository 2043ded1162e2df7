"""When deltasink's own Kafka client cannot log in as the stream does: the stream alone.

deltasink asks Kafka a few things itself (:mod:`pipelines.kafka.admin`): which partitions and
topic ids exist, the earliest and end offsets. Its client is librdkafka, which cannot do every
login Spark's Java client can (a Java callback class, ``databricks.serviceCredential``,
Kerberos on a build without GSSAPI). Refusing such a pipeline would refuse a stream Spark reads;
checking with other credentials would check something else than what Spark connects with. So
the run goes on with Spark's source as the only client, and each check that needed the own
client takes its figures from the stream, as :func:`reduced_checks` says at the start:

* topics and partitions: Spark's source lists them (new partitions from their earliest offset);
  a listed topic that does not exist fails the query (``UnknownTopicOrPartition``), which the
  run names in one line;
* a topic deleted and created again, and offsets deleted by retention: Spark's
  ``failOnDataLoss`` (offsets that went backwards, or are no longer there, fail the query; the
  run says so in one line); with ``fail_on_data_loss: false``, Spark skips them itself;
* lag: from the stream's progress, per batch, as always; ``status`` shows the last lag the
  stream saw, with its time;
* a broker that stops answering: the stream's own client timeouts, retried within
  ``source.broker_timeout``.
"""

from __future__ import annotations

from pipelines.config.model import SourceConfig


def reduced_checks(gap: str, source: SourceConfig) -> str:
    """The one line that names every check taken from the stream instead."""
    loss = ("fail the run (Spark's failOnDataLoss)" if source.fail_on_data_loss else
            "are skipped by Spark (fail_on_data_loss: false)")
    return (f"kafka: own client unavailable for {gap}; reduced checks: topics and partitions "
            f"from the stream, recreated topics and retention loss {loss}, lag from the "
            "stream's progress, broker outages from the stream's own timeouts")
