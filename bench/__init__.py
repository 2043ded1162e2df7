"""The deltasink benchmark suite: ``python -m bench.run`` (``make bench``)."""
