"""The dataset card of an export: `README.md` in the export folder, rewritten after each export.

    ExportState + its ExportFormat (schemas, card text, figure lines) + RunInfo
        ─► dataset_card() ─► <export>/README.md

Its YAML header gives the Hub and `load_dataset(<folder>)` the licence and a config per table
with rows (`data`, the default; grounding's `elements`; `failures`), each with its splits
(`train`, and `validation` when the split drew any) and features. Its body: the licence and
whose terms apply to the pages, the provenance (source run, pipeline, datagen and browser
versions, policy, which model or the engine stand-in wrote any content), the export's options,
the figures (samples per split, task-labelled and verified shares, the split's clusters), and
the failures by category.

Every string that comes from the run or the user (run id, pipeline name, paths, site and model
names, reasons) is escaped with `text()` before it is embedded: a pipeline named
`<img src=x onerror=alert(1)>` shows as those characters, never as HTML.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from typing import Any

import pyarrow as pa
import yaml

from datagen.errors import ExportError
from datagen.export.failures import CATEGORIES, FAILURE_SCHEMA
from datagen.export.figures import share
from datagen.export.formats import ExportFormat
from datagen.export.parquet import features_yaml
from datagen.export.split import SPLITS
from datagen.export.splitcard import split_lines
from datagen.export.state import ExportState, ShardRecord
from datagen.export.tally import tally_lines
from datagen.sink.inspect import VERIFICATION
from datagen.sink.models import RunInfo

COORDS = {
    "pixels": "integer screenshot pixels (origin top-left)",
    "qwen25vl": "integer pixels of the screenshot as Qwen2.5-VL's processor resizes it "
    "(`model_image_width` × `model_image_height`)",
    "norm1000": "integers in [0, 1000] relative to the screenshot's width / height",
    "norm01": "fractions in [0, 1] (4 decimals) relative to the screenshot's width / height",
}
INSTRUCTIONS = {
    "task": "the task's instruction",
    "relabeled": "the relabeled instruction where its check accepted it, else the task's "
    "(column `instruction_source`: relabel | task)",
    "step": "the step's own action description, a low-level instruction (column "
    "`instruction_source`: step, or step_from_action for outputs without descriptions)",
}
LICENSE = re.compile(r"^[a-z0-9][a-z0-9.+-]{0,63}$")
# What can start markup in the middle of a line (every embedded value follows other text): a
# backslash, code, emphasis, links, table cells, strikethrough, and `_` where it is not inside a
# word (CommonMark never reads `max_steps` as emphasis). `&<>"'` become entities after this, so
# that no raw HTML is left and an entity's own `#` and `;` are not escaped in turn.
MARKDOWN = re.compile(r"([\\`*\[\]|~]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9]))")


def text(value: object) -> str:
    """A value as inert Markdown: one line, its markup characters escaped, no raw HTML."""
    flat = " ".join(str(value).split())
    return html.escape(MARKDOWN.sub(r"\\\g<0>", flat), quote=True)


def license_of(value: str) -> str:
    """A `--license` value as the card's `license:` id (the Hub's ids: `other`, `cc-by-4.0`,
    `apache-2.0`, …); ExportError for one that is not an id."""
    given = value.strip().lower()
    if not LICENSE.match(given):
        raise ExportError(
            f"--license {value!r} is not a licence id; fix: give an id such as other, "
            "cc-by-4.0 or apache-2.0 (the Hub's license list)"
        )
    return given


def _configs(state: ExportState, schemas: Mapping[str, pa.Schema]) -> dict[str, Any]:
    """The YAML header's `configs` and `dataset_info`: each table with rows, by split."""
    totals = state.totals()
    configs: list[dict[str, Any]] = []
    info: list[dict[str, Any]] = []
    for name, schema in [*schemas.items(), ("failures", FAILURE_SCHEMA)]:
        splits = [s for s in SPLITS if totals.tables.get(f"{name}/{s}")]
        if not splits:  # `datasets` cannot load a config without data
            continue
        pattern = "failures/*.parquet" if name == "failures" else f"{name}/{{}}-part-*.parquet"
        files = [{"split": s, "path": pattern.format(s)} for s in splits]
        config: dict[str, Any] = {"config_name": name, "data_files": files}
        configs.append(config | ({"default": True} if name == "data" else {}))
        sizes = [
            {
                "name": s,
                "num_bytes": totals.bytes.get(f"{name}/{s}", 0),
                "num_examples": totals.tables[f"{name}/{s}"],
            }
            for s in splits
        ]
        info.append({"config_name": name, "features": features_yaml(schema), "splits": sizes})
    return {"configs": configs, "dataset_info": info}


def _header(state: ExportState, schemas: Mapping[str, pa.Schema]) -> str:
    head = {"license": state.license, **_configs(state, schemas)}
    head["tags"] = ["computer-use", "web-agents", "datagen"]
    return yaml.safe_dump(head, sort_keys=False, allow_unicode=True)


def _values(figures: dict[str, int], prefix: str) -> dict[str, int]:
    """The counts under `prefix=` (versions, policies, sites, models), by value."""
    return {k.split("=", 1)[1]: n for k, n in figures.items() if k.startswith(f"{prefix}=")}


def _listed(counts: dict[str, int], most: int = 12) -> str:
    """`a (3), b (1)`, escaped, at most `most` of them, the most frequent first."""
    top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    shown = ", ".join(f"{text(k)} ({n})" for k, n in top[:most])
    return shown + (f", and {len(top) - most} more" if len(top) > most else "") or "none"


def _names(names: list[str], most: int = 20) -> str:
    """`a, b, c`, escaped, at most `most` of them."""
    more = f", and {len(names) - most} more" if len(names) > most else ""
    return ", ".join(map(text, names[:most])) + more or "none"


def _bundled(run: RunInfo, figures: dict[str, int]) -> bool:
    """Every page came from datagen's bundled sites: the pipeline reads `sites` sources without
    a `dir` of the user's own, and every episode came from one."""
    sources = [s for s in run.pipeline.get("sources") or [] if isinstance(s, dict)]
    sites = [s for s in sources if s.get("type") == "sites"]
    own = bool(sites) and not any(s.get("dir") for s in sites)
    return own and set(_values(figures, "source")) == {"sites"}


def _license(state: ExportState, run: RunInfo, figures: dict[str, int]) -> list[str]:
    lines = [f"Licence: **{text(state.license)}** (`datagen export --license`)."]
    if _bundled(run, figures):
        lines.append(
            "The pages are datagen's bundled sites (`datagen/sites/`), the project's own, "
            "under its licence (Apache-2.0)."
        )
    else:
        lines.append(
            "The screenshots, page texts and URLs are of the pages the run visited; their "
            "owners' terms apply to them, whatever the licence above says of the labels. "
            f"Sites: {_listed(_values(figures, 'site'))}."
        )
    return lines


def _models(figures: dict[str, int]) -> list[str]:
    """Which content a model (or the engine stand-in) wrote, and which none did."""
    lines = []
    models, standin = _values(figures, "model"), figures.get("model_standin", 0)
    if standin:
        lines.append(
            f"- actions: {standin} steps chosen by datagen's engine stand-in, not a model: "
            "never train on them"
        )
    if models:
        lines.append(f"- actions: steps by model {_listed(models)}")
    if not models and not standin:
        lines.append("- actions: no model; the policy chose them (no engine call)")
    relabels = figures.get("relabels", 0)
    if relabels:
        by = _listed(_values(figures, "relabel_model"))
        standins = figures.get("relabel_standin", 0)
        lines.append(
            f"- relabeled instructions: {relabels} episodes, by {by}"
            + (f"; {standins} by the stand-in (not a model)" if standins else "")
        )
    expressions = figures.get("model_expressions", 0)
    if expressions:
        lines.append(f"- model-written referring expressions: {expressions} grounding rows")
    lines.append(
        "- step descriptions and DOM referring expressions: datagen's, from the page (no model)"
    )
    return lines


def _provenance(state: ExportState, run: RunInfo, figures: dict[str, int]) -> list[str]:
    policy = run.pipeline.get("policy")
    policy_type = policy.get("type") if isinstance(policy, dict) else "(not in its config)"
    return [
        f"- source run: {text(state.run_id)} (schema {text(state.schema_version)}) at "
        f"{text(state.source)}, {len(state.shards)} committed shards exported",
        f"- pipeline: {text(run.pipeline.get('name', ''))}; policy: {text(policy_type)} "
        f"(episodes by policy: {_listed(_values(figures, 'policy'))})",
        f"- datagen: {text(run.datagen_version)} started the run; rows written by "
        f"{_listed(_values(figures, 'datagen_version'))}",
        f"- browser: {_listed(_values(figures, 'browser_version'))}; Playwright "
        f"{_listed(_values(figures, 'playwright_version'))}",
        *_models(figures),
    ]


def _options(state: ExportState, fmt: ExportFormat) -> list[str]:
    options = state.options
    lines = [f"- format: {text(options['format'])}: {fmt.card}"]
    for key, value in options.items():
        if key == "format":
            continue
        about = {"coords": COORDS, "instruction": INSTRUCTIONS}.get(key, {}).get(str(value))
        lines.append(f"- {text(key)}: {text(value)}" + (f", {about}" if about else ""))
    return lines


def _figures(fmt: ExportFormat, totals: ShardRecord) -> list[str]:
    f = totals.figures
    per_split = ", ".join(f"{s} {totals.tables.get(f'data/{s}', 0)}" for s in SPLITS)
    lines = [
        f"- samples (`data`): {totals.rows} ({per_split}), from {totals.episodes_kept} episodes",
        *fmt.lines(totals),
    ]
    episodes = f.get("episodes", 0)
    lines.append(
        f"- source episodes: {episodes}, task-labelled (solved or an accepted relabel): "
        f"{share(f.get('episodes:labelled', 0), episodes)}"
    )
    verification = _values(f, "verification")
    if verification:
        lines.append(f"- replay verification of the source episodes: {_listed(verification)}")
    lines += tally_lines(totals.tally)
    return lines


def _verification_meanings() -> list[str]:
    """What the values of `verification` (and a step's `needed`) mean (sink.inspect's words)."""
    lines = [f"- `{value}`: {text(meaning)}" for value, meaning in VERIFICATION.items()]
    return [
        *lines,
        "- null: not solved, or verification off",
        "- a step's `needed`: true, replay showed the task needs it; false, the check passed "
        "with it left out; null, not verified",
    ]


def _split(state: ExportState) -> list[str]:
    """The `## Splits` lines (splitcard.py): what the split is made of, how far from the share."""
    return split_lines(state.split, _names)


def dataset_card(state: ExportState, fmt: ExportFormat, run: RunInfo) -> str:
    """The export's README.md: that of an export in `fmt`."""
    totals = state.totals()
    categories = [c for c in CATEGORIES if c in totals.failures] + sorted(
        set(totals.failures) - set(CATEGORIES)
    )
    failures = "\n".join(f"| {text(c)} | {totals.failures[c]} |" for c in categories)
    reasons = ", ".join(f"{text(r)}: {n}" for r, n in sorted(totals.rejected_by_reason.items()))
    source = "\n".join(f"| {text(t)} | {n} |" for t, n in totals.source_rows.items())
    section = "\n".join
    return f"""---
{_header(state, fmt.schemas)}---
# datagen export: {text(fmt.name)}

## Licence

{" ".join(_license(state, run, totals.figures))}

## Provenance

{section(_provenance(state, run, totals.figures))}

## Options

{section(_options(state, fmt))}

## Figures

{section(_figures(fmt, totals))}

| source table | rows read |
|---|---|
{source}

## Verification

Solved episodes are replayed to find the steps the task needs (`verification` on the episode,
`needed` on each step):

{section(_verification_meanings())}

## Splits

`load_dataset(<folder>)` gives `train` and, when the split drew any, `validation`.

{section(_split(state))}

## Failures

Failures are kept, never dropped: config `failures` lists every episode that did not succeed
and every task or episode that became a reject, with its `failure_category`.

| failure category | count |
|---|---|
{failures or "| (none) | 0 |"}

Rejected episodes by reason: {reasons or "none"}.

A rerun of `datagen export` adds only shards committed since (`_export.json` lists those done).
"""
