"""Kafka: the streaming source, admin calls, the embedded broker, producers."""
