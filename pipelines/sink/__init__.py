"""The foreachBatch sink: parse → quarantine → dedup → merge → commit."""
