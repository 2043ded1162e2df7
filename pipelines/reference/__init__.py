"""The docs site's reference pages, rendered from the code at build time so they cannot drift.

Each module renders one page from the object that defines what it documents: the CLI from
:func:`pipelines.cli.parser.build_parser`, the configuration from :class:`PipelineConfig`, the
environment variables from the code that reads them, the bundle from ``databricks.yml`` and
:mod:`pipelines.databricks.widgets`, the tables from their Spark schemas, and the wings from the
imports.
``docs/hooks.py`` adds the pages to the mkdocs build (:func:`pipelines.reference.pages.pages`).
"""
