"""The only package that knows Dask: cluster, worker plugin, shard submission, progress.

Nothing is imported here: a worker unpickling a shard task imports `runtime.tasks` and
`runtime.plugin` alone, not the driver and its run report (bokeh: ~1 s of CPU per worker).
"""
