"""The checkpoint's lease on S3 with open-source Spark: an object changed only by S3's own
conditional writes, where a Delta table's commit would not be exclusive.

Open-source Delta's default S3 log store lets two drivers commit the same version, one silently
replacing the other (delta-io/delta#4118), so the Delta lease table's compare-and-set does not
hold across drivers there. This lease is ``<checkpoint>/_deltasink/lease.json``, read and
written with boto3 (``pipelines/storage/conditional.py``):

* a new checkpoint's lease is created with ``If-None-Match: *``: of two creations one succeeds;
* taking, renewing and releasing it replace the version just read, with ``If-Match: <etag>``:
  of two runs that read the same version, one succeeds;
* its age is S3's own clock: the response's ``Date`` minus the object's ``LastModified``.

Every decision (who is live, what is refused, when a dead run's lease is taken over, what
``verify`` stops) is :class:`~pipelines.ledger.lease.Lease`'s, shared with the Delta lease. The
lease holds the bucket's endpoint settings and no client, so it stays picklable: the
``foreachBatch`` worker of a Spark Connect server verifies it with its own boto3 client, and
its own credentials from AWS's default chain.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import SparkSession

from pipelines import faults
from pipelines.ledger.lease import Lease
from pipelines.ledger.lease_table import Holder
from pipelines.runtime.sessions import on_databricks
from pipelines.storage import conditional, exclusive
from pipelines.storage.conditional import S3Place


@dataclass(frozen=True)
class S3Lease(Lease):
    """A :class:`Lease` kept in an S3 object (see the module).

    Attributes:
        place: where boto3 reaches the checkpoint's bucket (S3A's settings; no credential).
    """

    place: S3Place = field(default_factory=S3Place)

    @property
    def table(self) -> str:
        """Where the lease lives: the object's URI (``<checkpoint>/_deltasink/lease.json``)."""
        return f"{self.location.rstrip('/')}/_deltasink/lease.json"

    def _proven_ours(self, spark: SparkSession) -> bool:
        """Never from a Delta log: the S3 object's own read (one GET, no Spark job) decides."""
        return False

    def read(self, spark: SparkSession) -> Holder | None:
        """The lease as S3 has it (its ETag as the holder's ``tag``), or None when none."""
        found = conditional.get(self.place, self.table)
        if found is None:
            return None
        body = found.body
        return Holder(body.get("token"), body.get("pipeline"), body.get("host"),
                      int(body.get("pid") or 0), found.age_s, tag=found.etag)

    def _fields(self, held: bool = True) -> dict[str, Any]:
        if not held:
            return {"token": None, "pipeline": None, "host": None, "pid": None}
        return {"token": self.token, "pipeline": self.pipeline, "host": self.host,
                "pid": self.pid}

    def _create(self, spark: SparkSession) -> bool:
        """Create the lease holding this run's token (``If-None-Match: *``): one request, and
        S3 lets exactly one of two creations succeed, so nothing needs reading back."""
        return self._won(spark, conditional.create(self.place, self.table, self._fields()))

    def _ensure(self, spark: SparkSession) -> None:
        """Nothing: a PUT is all or nothing, so no creation leaves anything half made."""

    def _set_token(self, spark: SparkSession, seen: Holder | None) -> bool:
        """Replace the version ``seen`` with this run's holder (``If-Match``). With nothing seen,
        read the lease and take it only if it is free; a missing lease is not created."""
        if seen is None:
            seen = self.read(spark)
            if seen is None or seen.token is not None:
                return False
        return seen.tag is not None and self._won(
            spark, conditional.replace(self.place, self.table, self._fields(), seen.tag))

    def _won(self, spark: SparkSession, applied: bool) -> bool:
        """Whether a conditional write gave this run the lease: applied, or refused only because
        an earlier attempt of it was applied (botocore retries a write whose answer was lost,
        and the retry then finds this run's own version)."""
        if applied:
            return True
        held = self.read(spark)
        return held is not None and held.token == self.token

    def renew(self, spark: SparkSession) -> None:
        """Rewrite the lease (a new ``LastModified``) if it is still ours, against the version
        read: a run that took it over in between is never overwritten."""
        faults.maybe_crash("during_lease_renewal")
        held = self.read(spark)
        if held is not None and held.token == self.token and held.tag is not None:
            conditional.replace(self.place, self.table, self._fields(), held.tag)

    def tidy(self, spark: SparkSession) -> None:
        """Nothing: a rewritten S3 object leaves no files behind."""

    def _clear(self, spark: SparkSession) -> None:
        """Free the lease if it is still ours, against the version read."""
        held = self.read(spark)
        if held is not None and held.token == self.token and held.tag is not None:
            conditional.replace(self.place, self.table, self._fields(held=False), held.tag)


def lease_for(spark: SparkSession, location: str, pipeline: str) -> Lease:
    """The lease of checkpoint ``location``: an :class:`S3Lease` on S3 with open-source Spark
    (its endpoint settings read from the session once), else the Delta lease table."""
    if not exclusive.lease_on_object(location, on_databricks()):
        return Lease(location, pipeline)
    bucket, _ = conditional.split(location)
    return S3Lease(location, pipeline, place=S3Place.of(spark.conf.getAll, bucket))
