"""The write modes of a target: insert-only, latest-wins upserts, and their strategies."""
