"""The only package that knows Dask: cluster, worker plugin, shard submission, progress."""

from datagen.runtime.driver import RunProgress, RunSummary, execute

__all__ = ["RunProgress", "RunSummary", "execute"]
