"""Debezium change events: the envelope, Connect types, source positions and learned schemas."""
