"""The runtime: the SparkSession and the JVM artifacts it needs."""
