"""`datagen plan`: the capacity plan of a pipeline, before launch.

    command.run_plan (the CLI's flags) ─► calibration.resolve ─► SimConfig (the engine model)
    pipeline ─► model.plan_capacity() ─► CapacityPlan ─► render.show_capacity() ─► the tables
                    ▲ CPU and wall time per step: assumed (the benchmarks' figures), or
                    └ measure.measure() (`--measure`: one shard run here on the bundled sites)

`calibration` is where the stand-in's named calibrations come from (published figures fitted
on a reference workload). Not to be confused with `datagen.runplan`: the plan of a run (tasks,
shards, run id) that `datagen validate` and `datagen run --dry-run` print. No Dask here;
`measure` runs a shard the way a worker does, in this process.
"""
