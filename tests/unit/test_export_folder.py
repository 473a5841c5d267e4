"""An export folder, on a synthetic output (no browser): only Parquet in its folders, a
train / validation split that shares no group, site or (near-)duplicate screenshot, drawn
shard by shard; grounding one row per screenshot with a flat view beside it; a card with the
licence and provenance, every embedded string escaped."""

from __future__ import annotations

import io
import itertools
import json
from pathlib import Path
from typing import Any

import pyarrow.dataset as pds
import pytest
import yaml
from markdown_it import MarkdownIt
from typer.testing import CliRunner

from datagen.cli import app
from datagen.errors import ExportError
from datagen.export import FORMATS, export_output, parse_options
from datagen.export.card import text
from datagen.export.choices import Format
from datagen.export.phash import NEAR, NearIndex, distance, phash
from datagen.export.source import ShardData
from datagen.export.split import SplitState, assign
from datagen.sink.models import Marker
from datagen.sink.storage import LocalStorage
from tests.helpers import rows, shard_stats
from tests.unit.synthetic_run import Task, add_shard, page, task_page, write_run

# beta's task lands on alpha's start page, eta's (a shard later) on gamma's: one side each
SHARD_0 = [
    Task("alpha", "a1"),
    Task("alpha", "a2"),
    Task("beta", "b1", twin="alpha"),
    Task("gamma", "c1"),
    Task("gamma", "c2"),
]
SHARD_1 = [
    Task("delta", "d1"),
    Task("eps", "e1"),
    Task("zeta", "z1"),
    Task("alpha", "a3"),
    Task("eta", "h1", twin="gamma"),
]
SHARE = 0.5


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[Format, Path]]:
    """The output and each format's export, made shard by shard (shard 1 committed after the
    first export)."""
    folder = tmp_path_factory.mktemp("export")
    out = write_run(folder / "out", [SHARD_0])
    exports = {fmt: folder / fmt for fmt in FORMATS}
    for fmt in FORMATS:
        export_output(str(out), parse_options(fmt, validation=SHARE), str(exports[fmt]))
    add_shard(LocalStorage(out), 1, SHARD_1)
    for fmt in FORMATS:
        again = export_output(str(out), parse_options(fmt, validation=SHARE), str(exports[fmt]))
        assert again.exported == [1]
    return out, exports


def _images(value: Any) -> list[bytes]:
    """Every image's bytes in a row value (images alone, in lists, in structs)."""
    if isinstance(value, dict):
        if set(value) == {"bytes", "path"}:
            return [value["bytes"]] if value["bytes"] else []
        return [b for v in value.values() for b in _images(v)]
    if isinstance(value, list):
        return [b for v in value for b in _images(v)]
    return []


def _split(folder: Path, split: str, config: str = "data") -> list[dict[str, Any]]:
    files = sorted((folder / config).glob(f"{split}-part-*.parquet"))
    return [r for f in files for r in pds.dataset(f).to_table().to_pylist()]


def test_every_folder_of_every_export_is_parquet_that_pyarrow_reads(
    made: tuple[Path, dict[str, Path]],
) -> None:
    for fmt, folder in made[1].items():
        assert {p.name for p in folder.iterdir() if p.is_file()} == {"README.md", "_export.json"}
        folders = [p for p in folder.iterdir() if p.is_dir()]
        expected = {"data", "failures"} | ({"elements"} if fmt == "grounding" else set())
        assert {p.name for p in folders} == expected, fmt
        for sub in folders:
            assert all(p.suffix == ".parquet" for p in sub.rglob("*") if p.is_file()), sub
            table = pds.dataset(sub).to_table()  # raises on anything that is not Parquet
            assert table.num_rows > 0, sub


def test_train_and_validation_share_no_group_site_or_near_duplicate_screenshot(
    made: tuple[Path, dict[str, Path]],
) -> None:
    out, exports = made
    site = {e["group_id"]: e["site"] for e in rows(out, "episodes")}
    for fmt, folder in exports.items():
        sides = {s: _split(folder, s) for s in ("train", "validation")}
        assert all(sides.values()), (fmt, {s: len(r) for s, r in sides.items()})
        groups = {s: {r["group_id"] for r in found} for s, found in sides.items()}
        assert not groups["train"] & groups["validation"], fmt
        sites = {s: {site[g] for g in found} for s, found in groups.items()}
        assert not sites["train"] & sites["validation"], fmt
        shots = {s: {b for r in found for b in _images(r)} for s, found in sides.items()}
        assert not shots["train"] & shots["validation"], fmt  # no identical screenshot
        hashes = {s: {phash(b) for b in found} for s, found in shots.items()}
        closest = min(distance(a, b) for a in hashes["train"] for b in hashes["validation"])
        assert closest > NEAR, fmt
        # what holds them together: a twin page across sites, and a later shard's site or twin
        for a, b in (("alpha", "beta"), ("gamma", "eta"), ("alpha", "alpha")):
            assert (a in sites["train"]) == (b in sites["train"]), (fmt, a, b)


def test_the_split_is_the_same_in_every_format_and_kept_in_the_state(
    made: tuple[Path, dict[str, Path]],
) -> None:
    states = {f: json.loads((p / "_export.json").read_text()) for f, p in made[1].items()}
    splits = [s["split"]["groups"] for s in states.values()]
    assert all(s == splits[0] for s in splits) and len(splits[0]) == len(SHARD_0 + SHARD_1)
    state = states["sft"]["split"]
    assert state["share"] == SHARE and set(state["sites"]) == {t.site for t in SHARD_0 + SHARD_1}
    # every distinct screenshot's hash, with the side it went to: what a later shard follows
    assert set(state["hashes"].values()) == {"train", "validation"} and not state["conflicts"]


def test_load_dataset_gives_train_and_validation_for_every_format(
    made: tuple[Path, dict[str, Path]], tmp_path: Path
) -> None:
    datasets = pytest.importorskip("datasets")
    for fmt, folder in made[1].items():
        card = yaml.safe_load((folder / "README.md").read_text().split("---\n")[1])
        data = next(c for c in card["configs"] if c["config_name"] == "data")
        assert [f["split"] for f in data["data_files"]] == ["train", "validation"]
        loaded = datasets.load_dataset(str(folder), cache_dir=str(tmp_path / fmt))
        assert set(loaded) == {"train", "validation"}, fmt
        for split in ("train", "validation"):
            assert len(loaded[split]) == len(_split(folder, split)) > 0


def test_grounding_is_one_row_per_screenshot_and_a_flat_view_by_image_id(
    made: tuple[Path, dict[str, Path]], tmp_path: Path
) -> None:
    datasets = pytest.importorskip("datasets")
    out, exports = made
    folder = exports["grounding"]
    grounding, steps = rows(out, "grounding"), rows(out, "steps")
    screens = [r for s in ("train", "validation") for r in _split(folder, s)]
    flat = [r for s in ("train", "validation") for r in _split(folder, s, "elements")]
    assert len(screens) == len({(g["episode_id"], g["step_index"]) for g in grounding})
    assert len(flat) == sum(r["n_elements"] == len(r["elements"]) for r in screens) * 3
    assert len(flat) == len(grounding)
    by_id = {r["image_id"]: r for r in screens}
    assert len(by_id) == len(screens)
    for element in flat:
        screen = by_id[element["image_id"]]  # the flat view references, never copies
        assert "image" not in element
        assert element["expression"] in {e["expression"] for e in screen["elements"]}
    shot_bytes = sum(len(s["screenshot"]["bytes"]) for s in steps)
    loaded = 0
    for config in ("data", "elements"):
        parts = datasets.load_dataset(str(folder), config, cache_dir=str(tmp_path))
        loaded += sum(parts[s].data.nbytes for s in parts)
    assert loaded <= 3 * shot_bytes, (loaded, shot_bytes)
    copied = len(grounding) * shot_bytes / len(steps)  # a screenshot per element, as before
    assert loaded < copied / 2


def _card(folder: Path) -> tuple[dict[str, Any], str]:
    head, body = (folder / "README.md").read_text().split("---\n", 2)[1:]
    return yaml.safe_load(head), body


def test_card_gives_licence_provenance_and_figures(made: tuple[Path, dict[str, Path]]) -> None:
    head, body = _card(made[1]["sft"])
    assert head["license"] == "other"
    assert "datagen's bundled sites" in body and "the project's own" in body
    for line in (
        "source run: synthetic",
        "pipeline: synthetic; policy: explore",
        "browser: chromium/1.0 (20)",
        "actions: no model",
        "validation: 0.5",
        "train: 5 groups in 2 clusters",
        "validation: 5 of 10 task groups (50.0%), asked 50.0%: exactly",
        "verified by replay",
    ):
        assert line in body, line
    assert "samples (`data`): 20 (train 10, validation 10)" in body


def _one_task_run(folder: Path, name: str, sources: list[dict[str, Any]] | None = None) -> Path:
    out = write_run(folder / "out", [[Task("alpha", "a1")]], name=name)
    if sources is not None:  # another source than the bundled sites
        run = json.loads((out / "_run.json").read_text())
        run["pipeline"]["sources"] = sources
        (out / "_run.json").write_text(json.dumps(run))
    return out


def test_card_escapes_every_string_it_embeds(tmp_path: Path) -> None:
    hostile = "<img src=x onerror=alert(1)> *bold* [link](javascript:alert(1)) | cell"
    out = _one_task_run(tmp_path, hostile, sources=[{"type": "jsonl", "path": "t.jsonl"}])
    folder = tmp_path / "rl"
    export_output(str(out), parse_options("rl"), str(folder))
    body = _card(folder)[1]
    assert text(hostile) in body
    rendered = MarkdownIt("commonmark", {"html": True}).enable("table").render(body)
    assert "<img" not in rendered and "<a " not in rendered and "<em>bold" not in rendered
    assert "&lt;img src=x onerror=alert(1)&gt;" in rendered
    assert "owners' terms apply" in body and "Sites: alpha (2)" in body  # not the bundled sites


def test_license_is_checked_kept_across_reruns_and_shown(tmp_path: Path) -> None:
    out = _one_task_run(tmp_path, "p")
    folder = tmp_path / "rl"
    with pytest.raises(ExportError, match="is not a licence id"):
        export_output(str(out), parse_options("rl"), str(folder), license="MIT License!")
    export_output(str(out), parse_options("rl"), str(folder), license="CC-BY-4.0")
    export_output(str(out), parse_options("rl"), str(folder))  # no --license: kept
    head, body = _card(folder)
    assert head["license"] == "cc-by-4.0" and "Licence: **cc-by-4.0**" in body


def test_validation_0_writes_train_only_and_the_share_is_bounded(tmp_path: Path) -> None:
    out = _one_task_run(tmp_path, "p")
    folder = tmp_path / "sft"
    export_output(str(out), parse_options("sft", validation=0), str(folder))
    assert {p.name.split("-")[0] for p in (folder / "data").iterdir()} == {"train"}
    assert "no validation split" in _card(folder)[1]
    with pytest.raises(ExportError, match="--validation"):
        parse_options("sft", validation=0.9)
    said = r"made with --validation 0(\.0)? \(this one: --validation 0\.2\)"
    with pytest.raises(ExportError, match=said):  # the share is pinned like the others
        export_output(str(out), parse_options("sft", validation=0.2), str(folder))


def test_a_folder_of_the_earlier_layout_is_refused_with_the_fix(tmp_path: Path) -> None:
    out = _one_task_run(tmp_path, "p")
    folder = tmp_path / "old"
    folder.mkdir()
    (folder / "_export.json").write_text(json.dumps({"source": str(out), "run_id": "synthetic"}))
    with pytest.raises(ExportError, match=r"layout 1 .* fix: export into another folder"):
        export_output(str(out), parse_options("rl"), str(folder))


def _shard(groups: dict[str, tuple[str, list[bytes]]]) -> ShardData:
    """A shard of one episode per group: group → (site, its screenshots)."""
    episodes = [
        {"episode_id": g, "group_id": g, "site": site, "final_screenshot": None}
        for g, (site, _) in groups.items()
    ]
    steps = [
        {"episode_id": g, "step_index": i, "screenshot": {"bytes": shot, "path": None}}
        for g, (_, shots) in groups.items()
        for i, shot in enumerate(shots)
    ]
    marker = Marker(shard=0, files=(), stats=shard_stats(0), written_at=0)
    return ShardData(marker, episodes, steps, [], [])


def test_a_group_near_both_sides_goes_to_train_and_is_counted() -> None:
    state = SplitState(share=0.5)
    sides, state = assign(_shard({"g1": ("s1", [page("start:a")])}), state)
    assert sides == {"g1": "train"}  # the first cluster: train is never empty
    written = {f"{phash(page(f'start:{p}')):016x}": "validation" for p in "bc"}
    state = state.model_copy(update={"hashes": {**state.hashes, **written}})
    near_both = [page("start:a", mark=2), page("start:b", mark=2)]
    sides, state = assign(_shard({"g2": ("s2", near_both)}), state)
    assert sides == {"g2": "train"} and state.conflicts == ("g2",)
    sides, _ = assign(_shard({"g3": ("s3", [page("start:c", mark=3)])}), state)
    assert sides == {"g3": "validation"}  # near a validation screenshot only: follows it
    sides, _ = assign(_shard({"g4": ("s2", [page("start:c", mark=3)])}), state)
    assert sides == {"g4": "train"}  # its site is in train already, its screenshot is not


def test_near_index_finds_exactly_the_hashes_within_near_bits() -> None:
    import random

    rng = random.Random(7)
    base = [rng.getrandbits(64) for _ in range(50)]
    found = base + [h ^ (1 << rng.randrange(64)) ^ (1 << rng.randrange(64)) for h in base]
    found += [h ^ sum(1 << i for i in rng.sample(range(64), NEAR + 1)) for h in base]
    index = NearIndex()
    for h in found:
        index.add(h)
    for h in base:
        brute = sorted(c for c in set(found) if distance(c, h) <= NEAR)
        assert index.near(h) == brute


def test_phash_puts_a_marked_page_near_and_other_pages_far() -> None:
    pages = [page(f"p{i}") for i in range(8)]
    assert all(distance(phash(p), phash(q)) > NEAR for p, q in itertools.combinations(pages, 2))
    assert distance(phash(pages[0]), phash(page("p0", mark=3))) <= NEAR
    png = io.BytesIO()
    from PIL import Image

    Image.open(io.BytesIO(pages[1])).save(png, "PNG")
    # the same page as PNG (decoded whole, the JPEG at a fraction of its size): a few bits
    assert distance(phash(png.getvalue()), phash(pages[1])) <= NEAR // 2
    assert task_page(Task("x", "y", twin="z"), 0) != page("start:z")


def test_cli_takes_validation_and_license(tmp_path: Path) -> None:
    out = _one_task_run(tmp_path, "p")
    runner = CliRunner()
    to = tmp_path / "cli"
    args = ["export", str(out), "-f", "rl", "--validation", "0.3", "--license", "mit"]
    done = runner.invoke(app, [*args, "--to", str(to)])
    assert done.exit_code == 0, done.output
    state = json.loads((to / "_export.json").read_text())
    assert state["options"]["validation"] == 0.3 and state["split"]["share"] == 0.3
    assert _card(to)[0]["license"] == "mit"
    bad = runner.invoke(app, ["export", str(out), "-f", "rl", "--validation", "0.9"])
    assert bad.exit_code == 2 and "--validation" in " ".join(bad.output.split())


def test_a_huge_export_state_is_refused_without_being_read(tmp_path: Path) -> None:
    """A 3 GB (sparse) `_export.json` is refused from its size, with the fix, not read whole."""
    from datagen.export.state import STATE_KEY, load_state

    with open(tmp_path / STATE_KEY, "wb") as fh:
        fh.truncate(3 * 1024**3)
    with pytest.raises(ExportError, match=r"more than the .* such a file holds.*fix:"):
        load_state(LocalStorage(str(tmp_path)))
