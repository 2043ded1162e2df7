"""Where tables and files live: a table by path or catalog name, files read through Spark, and
what each store needs (S3 settings, catalogs, what makes a write exclusive there)."""
