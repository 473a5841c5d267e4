"""`datagen engine sim`: a stand-in for a vLLM server, for tests, benchmarks and capacity
planning. Same routes, request and response shapes, errors, metric names and queueing as
vLLM 0.14.1 (reference/engine-spec.md §3, §6). Its answers are schema-valid but arbitrary
(relabel prompts get answers derived from their action lines, `hindsight.py`): it is a load
and protocol double, **never a model**, and says so in its model listing.
Its settings (`SimConfig`) are part of the pipeline file: `datagen/config/sim.py`."""

from datagen.engine.sim.server import SimServer, make_app

__all__ = ["SimServer", "make_app"]
