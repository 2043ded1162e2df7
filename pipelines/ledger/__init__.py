"""The ledger: what has landed and who may write.

What the checkpoint planned and committed (``checkpoint``), what the target's Delta log records
(``deltalog``, ``state``), whether the two agree (``reconcile``), where a run starts
(``resume``), how far behind the topic it is (``lag``), and the single-writer lease
(``lease``), with ``record`` the format of what each commit records. Every read goes through
Spark (``pipelines.storage.store``, Delta SQL), so it works on any store and over Spark Connect.
"""
