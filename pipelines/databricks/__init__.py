"""The Databricks faces: the notebooks' entry points (``jobs``), their widgets → config
(``widgets``), and the bundle's jobs from ``notebooks/pipelines.d`` (``bundle``, with
``bundle_jobs`` and ``bundle_groups``)."""
