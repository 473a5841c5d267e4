"""`datagen export` on a real run: explore on bundled-site tasks with `run.repeats: 2`, two
shards committed one after the other (the second while an uncommitted part of it lies in the
output), exported to every format and loaded back with `datasets`."""

from __future__ import annotations

import io
import json
import shutil
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.dataset as pds
import pytest
import yaml
from PIL import Image
from typer.testing import CliRunner

from datagen.cli import app
from datagen.export import ExportResult, export_output, parse_options
from datagen.export.coords import Frame
from datagen.export.phash import NEAR, distance, phash
from datagen.export.source import group_id
from datagen.records import TaskSpec
from datagen.sink.storage import LocalStorage
from datagen.sink.writer import claim_output
from datagen.source import BUNDLED_SITES
from datagen.source.readers import read_sites
from tests.helpers import Local, ReadyPlugin, closed_port, make_config, rows

pytestmark = pytest.mark.browser
datasets = pytest.importorskip("datasets")

# With run.seed 19 and 4 steps, explore solves one repeat of each of these and not the other
# (seeds are per task and repeat; the pages are deterministic): the pairs the test needs.
SHARD_0 = ["settings-open-notifications", "shop-add-any", "todo-filter-completed"]
SHARD_1 = ["shop-filter-books"]


@dataclass
class Made:
    """The run's output and the incremental sft export made while it was written."""

    out: Path
    first: ExportResult  # shard 0 committed, shard 1 only an uncommitted part
    second: ExportResult  # shard 1 committed since
    third: ExportResult  # nothing new


def _tasks(names: list[str]) -> list[TaskSpec]:
    by_id = {t.id: t for t in read_sites(BUNDLED_SITES)}
    return [by_id[n] for n in names]


@pytest.fixture(scope="module")
def made(
    browser_plugin: ReadyPlugin, local: Local, tmp_path_factory: pytest.TempPathFactory
) -> Made:
    folder = tmp_path_factory.mktemp("export")
    # replay verification marks the steps each solved episode's task needs: the only steps
    # whose samples carry the task's instruction, and the chosen side of a pair
    config = make_config(
        folder,
        run={"max_steps": 4, "repeats": 2, "seed": 19},
        annotation={"verify": {"max_replays": 12}},
    )
    storage = LocalStorage(folder / "out")
    claim_output(storage, "r", {"name": "export-test"})
    runner = local.runner(config, storage=storage)  # one context for both shards
    browser_plugin.run(runner.run(0, _tasks(SHARD_0)), timeout=300)
    # a shard being written: its part is there, its marker not yet
    shutil.copy(
        storage.root / "steps/part-00000.parquet", storage.root / "steps/part-00001.parquet"
    )
    sft = parse_options("sft", filter="all")
    first = export_output(str(storage.root), sft)
    extra = [
        TaskSpec(id="no-check", start_url="site://todo/", instruction="Look around."),
        # the URL guard stops it: a task that never becomes an episode (a reject)
        TaskSpec(id="blocked", start_url=f"http://10.0.0.1:{closed_port()}/", instruction="x"),
    ]
    browser_plugin.run(runner.run(1, _tasks(SHARD_1) + extra), timeout=300)
    second = export_output(str(storage.root), sft)
    third = export_output(str(storage.root), sft)
    return Made(storage.root, first, second, third)


def load(folder: Path, config: str = "data") -> Any:
    return datasets.load_dataset(
        "parquet", data_files=str(folder / config / "*.parquet"), split="train"
    )


def export(made: Made, fmt: str, **options: Any) -> Path:
    name = "-".join([fmt, *(f"{k}_{v}" for k, v in sorted(options.items()))])
    to = made.out.parent / "exports" / name
    if not to.exists():
        export_output(str(made.out), parse_options(fmt, **options), str(to))
    return to


def episodes(made: Made) -> dict[str, dict[str, Any]]:
    return {e["episode_id"]: e for e in rows(made.out, "episodes")}


def task_labelled(made: Made) -> set[tuple[str, int]]:
    """(episode, step) of the steps replay verification showed their task needs."""
    verified = {i for i, e in episodes(made).items() if e["verification"] in ("minimal", "reduced")}
    return {
        (s["episode_id"], s["step_index"])
        for s in rows(made.out, "steps")
        if s["episode_id"] in verified and s["needed"] is True
    }


def test_exports_only_committed_shards_and_then_only_new_ones(made: Made) -> None:
    assert made.first.exported == [0] and made.first.skipped == 0
    assert made.second.exported == [1] and made.second.skipped == 1
    assert made.third.exported == [] and made.third.skipped == 2 and made.third.rows_added == 0
    steps = rows(made.out, "steps")
    shard0 = {e["episode_id"] for e in rows(made.out, "episodes") if e["task_id"] in SHARD_0}
    assert made.first.rows_added == sum(s["episode_id"] in shard0 for s in steps)
    assert made.first.rows_added + made.second.rows_added == len(steps)
    folder = made.out / "exports" / "sft"
    data = load(folder)
    assert len(data) == len(steps)  # each step once: shard 1's stray part was never read
    assert Counter((r["episode_id"], r["step_index"]) for r in data).most_common(1)[0][1] == 1
    state = json.loads((folder / "_export.json").read_text())
    assert sorted(state["shards"]) == ["0", "1"]


def test_sft_samples_load_as_chat_with_images(made: Made) -> None:
    by_id = episodes(made)
    solved = [e for e in by_id.values() if e["success"]]
    assert solved and len(solved) < len(by_id)  # both kinds, or the filter proves nothing
    needed = task_labelled(made)
    assert needed  # verification found the steps of some solved episode, or labels prove nothing
    data = load(export(made, "sft", history=2, coords="norm1000"))
    assert len(data) == sum(e["n_steps"] for e in solved)  # --filter solved (the default)
    for sample in data:
        system, user, assistant = sample["messages"]
        assert system["role"] == "system" and "1000x1000" in system["content"][0]["text"]
        assert [p["type"] for p in user["content"]].count("image") == len(sample["images"])
        assert len(sample["images"]) == min(2, len(sample["previous_steps"]) + 1)
        assert all(isinstance(i, Image.Image) for i in sample["images"])
        assert sample["images"][-1].size == (sample["image_width"], sample["image_height"])
        assert assistant["content"][0]["text"] == sample["action"]
        key = (sample["episode_id"], sample["step_index"])
        if key in needed:  # the task's instruction, with only the needed steps before it
            assert sample["instruction"] == by_id[sample["episode_id"]]["instruction"]
            assert sample["instruction_source"] == "task"
            assert {(key[0], i) for i in sample["previous_steps"]} <= needed
        else:  # any other step of a solved episode: a step-level sample
            assert sample["instruction"] == sample["action_description"]
            assert sample["instruction_source"] == "step"
            assert sample["previous_steps"] == list(range(sample["step_index"]))
        assert sample["coords"] == "norm1000" and sample["failure_category"] is None
        assert user["content"][-1]["text"].startswith(f"Instruction: {sample['instruction']}")


def test_step_and_relabeled_instructions_name_their_source(made: Made) -> None:
    steps = {(s["episode_id"], s["step_index"]): s for s in rows(made.out, "steps")}
    data = load(export(made, "sft", instruction="step"))
    assert len(data) > 0
    for sample in data:
        step = steps[(sample["episode_id"], sample["step_index"])]
        assert sample["instruction"] == step["action_description"] != ""
        assert sample["instruction_source"] == "step"
    relabeled = load(export(made, "sft", instruction="relabeled"))
    accepted = {e["episode_id"] for e in rows(made.out, "episodes") if e.get("relabel_accepted")}
    needed = task_labelled(made)
    for sample in relabeled:  # no relabel role in this run: every sample falls back, says so
        key = (sample["episode_id"], sample["step_index"])
        expected = "relabel" if key[0] in accepted else "task" if key in needed else "step"
        assert sample["instruction_source"] == expected


def test_every_convention_maps_back_to_the_same_pixel(made: Made) -> None:
    clicks = {
        (s["episode_id"], s["step_index"]): s
        for s in rows(made.out, "steps")
        if s["action_type"] == "click"
    }
    assert clicks
    for coords in ("pixels", "qwen25vl", "norm1000", "norm01"):
        for syntax in ("tool", "code", "uitars"):
            data = load(export(made, "sft", filter="all", coords=coords, syntax=syntax))
            # the filter reads only its column: each row's images are decoded once, below
            clicked = data.filter(lambda kind: kind == "click", input_columns="action_type")
            for sample in clicked:
                step = clicks[(sample["episode_id"], sample["step_index"])]
                w, h = step["image_width"], step["image_height"]
                frame = Frame.of(w, h, parse_options("sft", coords=coords))
                assert (sample["model_image_width"], sample["model_image_height"]) == (
                    frame.model_width,
                    frame.model_height,
                )
                u, v = sample["point"]
                x, y = frame.back(u, v)
                tol_x, tol_y = frame.tolerance()
                assert abs(x - step["x_px"]) <= tol_x + 1e-9  # float error
                assert abs(y - step["y_px"]) <= tol_y + 1e-9
                text = sample["action"]
                if syntax == "tool":
                    call = json.loads(text.removeprefix("<tool_call>").removesuffix("</tool_call>"))
                    assert call["arguments"]["coordinate"] == sample["point"]
                elif syntax == "code":
                    assert text.startswith("pyautogui.click(x=")
                    shown = [float(v.split("=")[1]) for v in text[16:-1].split(", ")]
                    assert shown == sample["point"]
                else:
                    box = text.split("Action: click(start_box='<|box_start|>(")[1].split(")")[0]
                    assert [float(c) for c in box.split(",")] == sample["point"]
                screen = frame.screen()
                system = sample["messages"][0]["content"][0]["text"]
                assert f"The screen's resolution is {screen[0]}x{screen[1]};" in system


def test_grounding_is_a_row_per_screenshot_with_its_elements(made: Made) -> None:
    source = {
        (g["episode_id"], g["step_index"], g["element_index"]): g
        for g in rows(made.out, "grounding")
    }
    folder = export(made, "grounding", coords="norm01")
    data = load(folder)
    assert len(data) == len({k[:2] for k in source}) > 0  # one row per screenshot
    assert sum(len(r["elements"]) for r in data) == len(source)
    for sample in data.select(range(0, len(data), 7)):
        assert isinstance(sample["image"], Image.Image)
        assert sample["image_id"] == f"{sample['episode_id']}:{sample['step_index']}"
        for element in sample["elements"]:
            g = source[(sample["episode_id"], sample["step_index"], element["element_index"])]
            assert element["expression"] == g["referring_expression"]
            assert sample["image"].size == (g["image_width"], g["image_height"])
            x1, y1, x2, y2 = element["bbox"]
            px, py = element["point"]
            assert 0 <= x1 <= px <= x2 <= 1 and 0 <= y1 <= py <= y2 <= 1
    flat = load(folder, "elements")  # the flat view: an element a row, its image by key
    assert len(flat) == len(source) and "image" not in flat.column_names
    assert set(flat["image_id"]) == set(data["image_id"])


def test_grounding_loaded_by_datasets_takes_at_most_3x_its_screenshots(
    made: Made, tmp_path: Path
) -> None:
    folder = export(made, "grounding")
    shots = pds.dataset(folder / "data").to_table(columns=["image"]).column("image")
    shot_bytes = sum(len(image["bytes"]) for image in shots.to_pylist())
    loaded = 0
    for config in ("data", "elements"):
        parts = datasets.load_dataset(str(folder), config, cache_dir=str(tmp_path))
        loaded += sum(parts[split].data.nbytes for split in parts)
    assert 0 < loaded <= 3 * shot_bytes, (loaded, shot_bytes)


@pytest.mark.parametrize("fmt", ["sft", "grounding", "rl", "pairs"])
def test_every_export_folder_is_parquet_that_pyarrow_reads(made: Made, fmt: str) -> None:
    folder = export(made, fmt, validation=0.5)
    subfolders = [p for p in folder.iterdir() if p.is_dir()]
    assert {p.name for p in subfolders} >= {"data", "failures"}
    for sub in subfolders:
        assert all(p.suffix == ".parquet" for p in sub.rglob("*") if p.is_file()), sub
        assert pds.dataset(sub).to_table().num_rows > 0, sub


@pytest.mark.parametrize("fmt", ["sft", "rl"])
def test_validation_shares_no_group_site_or_screenshot_with_train(made: Made, fmt: str) -> None:
    options = {"filter": "all"} if fmt == "sft" else {}
    folder = export(made, fmt, validation=0.5, **options)
    site = {e["group_id"]: e["site"] for e in rows(made.out, "episodes")}
    sides = {}
    for split in ("train", "validation"):
        files = sorted(str(p) for p in (folder / "data").glob(f"{split}-part-*.parquet"))
        sides[split] = pds.dataset(files).to_table().to_pylist()
        assert sides[split], split  # with run r: settings and todo train, shop validation
    groups = {s: {r["group_id"] for r in found} for s, found in sides.items()}
    assert not groups["train"] & groups["validation"]
    assert not {site[g] for g in groups["train"]} & {site[g] for g in groups["validation"]}
    shots = {s: {i["bytes"] for r in found for i in r["images"]} for s, found in sides.items()}
    assert not shots["train"] & shots["validation"]
    hashes = {s: [phash(b) for b in found] for s, found in shots.items()}
    assert min(distance(a, b) for a in hashes["train"] for b in hashes["validation"]) > NEAR
    card = yaml.safe_load((folder / "README.md").read_text().split("---\n")[1])
    loaded = datasets.load_dataset(str(folder))
    assert set(loaded) == {"train", "validation"} and [
        c["config_name"] for c in card["configs"]
    ] == ["data", "failures"]


def test_rl_groups_are_a_task_s_repeats_with_rewards(made: Made) -> None:
    data = load(export(made, "rl"))
    by_id = episodes(made)
    assert len(data) == len(by_id)
    groups: dict[str, list[Any]] = defaultdict(list)
    for r in data:
        groups[r["group_id"]].append(r)
        e = by_id[r["episode_id"]]
        assert r["group_id"] == group_id("r", r["task_id"])
        assert r["reward"] == (None if e["success"] is None else float(e["success"]))
        assert len(r["steps"]) == len(r["images"]) == e["n_steps"]
        assert "The screen's resolution is" in r["system"]
        assert (r["failure_category"] is None) == (e["success"] is True)
    for members in groups.values():
        assert len({m["task_id"] for m in members}) == 1
        assert sorted(m["sample_index"] for m in members) == [0, 1]
        assert len({m["seed"] for m in members}) == 2 and members[0]["group_size"] == 2
    assert {r["task_id"] for r in data} == {*SHARD_0, *SHARD_1, "no-check"}


def test_pairs_are_a_needed_step_against_a_failed_episode_s_other_action(made: Made) -> None:
    data = load(export(made, "pairs"))
    by_id = episodes(made)
    steps = {(s["episode_id"], s["step_index"]): s for s in rows(made.out, "steps")}
    needed = task_labelled(made)
    assert len(data) >= 1  # a failed repeat that started elsewhere than a verified one
    for pair in data:
        chosen, rejected = by_id[pair["chosen_episode_id"]], by_id[pair["rejected_episode_id"]]
        assert (pair["chosen_episode_id"], pair["chosen_step_index"]) in needed
        assert rejected["success"] is False and pair["rejected_failure_category"] is not None
        assert chosen["task_id"] == rejected["task_id"] == pair["task_id"]
        good = steps[(pair["chosen_episode_id"], pair["chosen_step_index"])]
        bad = steps[(pair["rejected_episode_id"], pair["rejected_step_index"])]
        if pair["same_state"] == "start":
            assert good["step_index"] == bad["step_index"] == 0
        else:
            shown = good["path_screenshot"] or good["screenshot"]  # the minimal path's screen
            assert shown["bytes"] == bad["screenshot"]["bytes"]
        assert pair["chosen_action"] != pair["rejected_action"]
        assert [m["role"] for m in pair["prompt"]] == ["system", "user"]
        assert pair["chosen"][0]["content"][0]["text"] == pair["chosen_action"]
        assert pair["rejected"][0]["content"][0]["text"] == pair["rejected_action"]
        assert len(pair["images"]) == 1 and isinstance(pair["images"][0], Image.Image)
    assert "no-check" not in set(data["task_id"])


def test_failures_are_categorised_and_counted_in_the_card(made: Made) -> None:
    folder = made.out / "exports" / "sft"
    failures = load(folder, "failures")
    by_id = episodes(made)
    unsolved = {i for i, e in by_id.items() if not e["success"]}
    assert {f["episode_id"] for f in failures if f["failure_category"] != "rejected"} == unsolved
    categories = Counter(failures["failure_category"])
    assert categories["no_check"] == 2 and categories["max_steps"] >= 3
    rejected = [f for f in failures if f["failure_category"] == "rejected"]
    assert [(f["task_id"], f["reject_reason"]) for f in rejected] == [
        ("blocked", "blocked_url")
    ] * 2
    data = load(folder)
    assert all((s["failure_category"] is None) == (s["success"] is True) for s in data)
    text = (folder / "README.md").read_text()
    card = yaml.safe_load(text.split("---\n")[1])
    info = {
        c["config_name"]: sum(s["num_examples"] for s in c["splits"]) for c in card["dataset_info"]
    }
    assert info == {"data": len(data), "failures": len(failures)}
    assert f"| no_check | {categories['no_check']} |" in text and "blocked_url: 2" in text
    assert "- coords: pixels" in text and "the task's instruction" in text
    assert "source run: r (schema" in text and "pipeline: export-test" in text
    loaded = datasets.load_dataset(str(folder), "failures", split="train")
    assert len(loaded) == len(failures)


def test_cli_exports_and_names_bad_options(made: Made) -> None:
    runner = CliRunner()
    to = made.out.parent / "cli-grounding"
    result = runner.invoke(app, ["export", str(made.out), "-f", "grounding", "--to", str(to)])
    assert result.exit_code == 0, result.output
    assert "2 shards exported" in result.output and (to / "README.md").is_file()
    again = runner.invoke(app, ["export", str(made.out), "-f", "grounding", "--to", str(to)])
    assert "0 shards exported (0 rows), 2 already there" in again.output
    cases = {
        ("-f", "video"): "'video' is not one of 'sft', 'grounding', 'rl', 'pairs'",
        ("-f", "grounding", "--history", "3"): "does not read --history",
        ("-f", "sft", "--filter", "judged"): "add --instruction relabeled",
        ("-f", "sft", "--coords", "inches"): "'--coords': Value error, 'inches' is not one of",
        ("-f", "grounding", "--coords", "norm01", "--to", str(to)): "(this one: --coords norm01)",
        ("-f", "tasks", "--coords", "norm1000"): "--format tasks does not read --coords",
    }
    for args, message in cases.items():
        bad = runner.invoke(app, ["export", str(made.out), *args])
        said = " ".join(bad.output.replace("│", " ").split())  # the console wraps long lines
        assert bad.exit_code == 2 and message in said, (args, said)
    nothing = runner.invoke(app, ["export", str(made.out.parent), "-f", "rl"])
    assert nothing.exit_code == 2 and "holds no datagen output" in " ".join(nothing.output.split())


def test_exports_from_and_to_s3(made: Made, monkeypatch: pytest.MonkeyPatch) -> None:
    import boto3

    from tests.s3server import CREDENTIALS, moto_s3

    for key, value in CREDENTIALS.items():
        monkeypatch.setenv(key, value)
    with moto_s3("exports") as endpoint:
        s3 = boto3.client("s3", endpoint_url=endpoint)
        for path in made.out.rglob("*"):
            if path.is_file() and "exports" not in path.parts:
                s3.upload_file(str(path), "exports", f"run/{path.relative_to(made.out)}")
        options = parse_options("rl", coords="norm01")
        result = export_output("s3://exports/run", options, endpoint_url=endpoint)
        assert result.exported == [0, 1] and result.target == "s3://exports/run/exports/rl"
        again = export_output("s3://exports/run", options, endpoint_url=endpoint)
        assert again.exported == [] and again.skipped == 2
        local = made.out.parent / "from-s3"
        local.mkdir()
        listing = s3.list_objects_v2(Bucket="exports", Prefix="run/exports/rl/data/")
        for key in [o["Key"] for o in listing["Contents"]]:
            s3.download_file("exports", key, str(local / key.rsplit("/", 1)[1]))
    data = datasets.load_dataset("parquet", data_files=str(local / "*.parquet"), split="train")
    assert len(data) == len(episodes(made)) and isinstance(data[0]["final_screenshot"], Image.Image)
    image = Image.open(io.BytesIO(rows(made.out, "episodes")[0]["final_screenshot"]["bytes"]))
    assert image.size == (data[0]["image_width"], data[0]["image_height"])
