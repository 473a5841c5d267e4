"""The ground floor of the pipeline file: the base of every section, and the mark that takes a
field out of the run id.

    sections (sources, browser, policy, …) ─► PipelineConfig ─► output_hash() ─► run id

Nothing in `datagen.config` imports a stage package: every stage reads its settings from here.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.config import JsonDict
from pydantic.fields import FieldInfo

NEUTRAL: JsonDict = {"output_neutral": True}
"""Mark of an output-neutral field: `Field(..., json_schema_extra=NEUTRAL)`.

A field is output-neutral when changing it leaves the content of every row as it is. That is
where the output goes (`output.*`, `name`), who computes it (`cluster.*`, the browser binary,
the engine's and each role's URL and key), how fast and how many at once (in-flight budgets,
shares, the stand-in's timing model, browser recycling), and limits that only decide *whether*
an episode or a request finishes, never what a row it writes contains (episode and step
timeouts, memory ceilings, request timeouts, retries, waits for a server or workers).

Not neutral: anything that changes what a page shows or when it is captured (viewport, scale,
image encoding, settle times, Chromium switches), what the model is asked or answers (profile,
model, sampling, the stand-in's answers and faults), which tasks, episodes and shards exist
(sources, seed, repeats, limits, sharding), and the action and navigation timeouts (their expiry
is written into the step's error text). When in doubt, leave a field unmarked: a run id that
changes too often refuses a rerun, one that changes too rarely mixes different rows.

`PipelineConfig.output_hash()` leaves marked fields out of the run id, so a killed run retuned
(more workers, another server, longer timeouts) resumes into its output.
"""


def is_neutral(field: FieldInfo) -> bool:
    """Is this field marked output-neutral (`NEUTRAL`)?"""
    extra = field.json_schema_extra
    return isinstance(extra, dict) and extra.get("output_neutral") is True


def neutral_exclusions(value: Any) -> Any:
    """A `model_dump(exclude=...)` spec leaving out every neutral field of `value`, however deep:
    in sub-sections, in the chosen member of a union, in list items. None when nothing is."""
    if isinstance(value, BaseModel):
        spec: dict[str, Any] = {}
        for name, field in type(value).model_fields.items():
            inner = True if is_neutral(field) else neutral_exclusions(getattr(value, name))
            if inner is not None:
                spec[name] = inner
        return spec or None
    if isinstance(value, list | tuple):
        items = {i: s for i, item in enumerate(value) if (s := neutral_exclusions(item))}
        return items or None
    return None


class Section(BaseModel):
    """Base of every config section: unknown keys are errors, values immutable."""

    # NaN and infinity are never meant: `.inf` as a timeout is "forever", which breaks later.
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)
