"""How a record's bytes become a decoded value: JSON, Avro, and the Debezium change envelope."""
