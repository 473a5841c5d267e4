"""From a run to a trained model: a real run on real Chromium, `datagen export --format sft`,
then the export through TRL's own vision data path, the example streaming loop, TRL's
`SFTTrainer` training a tiny Qwen2.5-VL for a few optimizer steps, and docs/training.md's Python
blocks as written.

TRL's path is `DataCollatorForVisionLanguageModeling` (what `SFTTrainer` collates a vision
model's samples with) and `trl.data_utils.prepare_multimodal_messages`, on a Qwen2-VL processor
built locally by examples/train_stream.py (a tokenizer trained on the fly, the image processor
from its settings); examples/train_sft.py puts Qwen2.5-VL's processor and own chat template
around the same pieces and builds a randomly initialised Qwen2.5-VL from a config: no hub
download. TRL needs torch, which PyPI ships only with CUDA (about 6 GB installed), so those tests
need the optional `train` extra and skip without it (docs/training.md); the streaming example's
test runs everywhere, with the best collator installed.
"""

from __future__ import annotations

import importlib.util
import io
import json
import math
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import pyarrow.parquet as pq
import pytest
from PIL import Image

from datagen.runplan import make_plan
from datagen.sink.storage import LocalStorage
from datagen.sink.writer import claim_output
from tests.helpers import REPO, Local, Row, datagen, make_config

pytestmark = pytest.mark.browser
EXAMPLE = REPO / "examples" / "train_stream.py"
SFT_EXAMPLE = REPO / "examples" / "train_sft.py"
DOCS = REPO / "docs" / "training.md"
TRAIN_EXTRA = ("trl", "torch", "torchvision", "transformers", "tokenizers")
HISTORY = 2  # screenshots per sample: the first step of an episode has one, the others two
# Nothing is fetched: a hub name that slipped through fails instead of downloading.
OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
# What loads transformers/torch (10-25 s each on 2 cores, with the train extra only): CI's
# second step (scripts/test.sh -m slow), not the default run.
SLOW = pytest.mark.slow


def _needs(*modules: str) -> pytest.MarkDecorator:
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    return pytest.mark.skipif(
        bool(missing),
        reason=f"needs {', '.join(missing)}: pip install -e '.[train]' (docs/training.md)",
    )


def _example(path: Path = EXAMPLE) -> ModuleType:
    """An example script as a module (examples/ is not part of the package)."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def run(local: Local, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small run (two bundled-site tasks, two repeats, two explore steps) in `runs/demo`, the
    folder docs/training.md's snippets read. Run here, on the module's browser (datagen's
    local runner: the shards a worker runs, written as a worker writes them), not as `datagen
    run`: what these tests read is `datagen export`'s output, and a cluster and a second
    interpreter cost more than the run itself (issue 44 item 7)."""
    folder = tmp_path_factory.mktemp("training")
    config = make_config(
        folder,
        run={"max_steps": 2, "tasks_per_shard": 2, "limit": 2, "seed": 3, "repeats": 2},
    )
    plan = make_plan(config)
    out = folder / "runs" / "demo"
    storage = LocalStorage(out)
    claim_output(storage, plan.run_id, {"name": "training"})
    for shard, tasks in zip(plan.shard_ids, plan.shards, strict=True):
        local.run(config, shard, tasks, timeout=300, run_id=plan.run_id, storage=storage)
    return out


@pytest.fixture(scope="module")
def export(run: Path) -> Path:
    """The run exported as `sft` where `datagen export` puts it by default (`exports/sft`),
    failures included (explore rarely solves a task), two screenshots of history."""
    args = ["--format", "sft", "--filter", "all", "--history", str(HISTORY)]
    done = datagen("export", str(run), *args)
    assert done.returncode == 0, done.stdout + done.stderr
    return run / "exports" / "sft"


def _samples(export: Path) -> list[Row]:
    """The export's samples as a trainer's dataset yields them: loaded through the export's
    dataset card (its default config), streamed, images as PIL."""
    datasets: Any = pytest.importorskip("datasets")
    return list(datasets.load_dataset(str(export), split="train", streaming=True))


def _rows(export: Path) -> list[Row]:
    """The export's samples as plain Arrow reads them (image bytes, not PIL)."""
    parts = sorted((export / "data").glob("*.parquet"))
    assert parts, f"no sft parts in {export}"
    return [r for p in parts for r in pq.read_table(p).to_pylist()]


@_needs(*TRAIN_EXTRA)
def test_trl_fills_each_image_part_with_its_screenshot_in_order(export: Path) -> None:
    data_utils: Any = pytest.importorskip("trl.data_utils")
    samples, rows = _samples(export), _rows(export)
    assert samples and any(len(s["images"]) == HISTORY for s in samples)
    for sample, row in zip(samples, rows, strict=True):
        filled = data_utils.prepare_multimodal_messages(sample["messages"], sample["images"])
        parts = [p for m in filled for p in m["content"] if p["type"] == "image"]
        assert [p["image"] for p in parts] == sample["images"]
        # the PIL images are the exported screenshots, oldest first, the step's own last
        stored = [Image.open(io.BytesIO(im["bytes"])) for im in row["images"]]
        assert [im.tobytes() for im in stored] == [im.tobytes() for im in sample["images"]]
        assert sample["images"][-1].size == (row["image_width"], row["image_height"])


def _processor(example: ModuleType, template: str) -> tuple[Any, str | None]:
    """The example's local processor with the chat template `template` names, and the template
    the collator gets, chosen as `SFTTrainer` chooses it for `assistant_only_loss`: the
    processor's own if it marks the assistant's turn, else TRL's training variant of it."""
    chat: Any = pytest.importorskip("trl.chat_template_utils")
    processor = example.local_processor()
    if template == "qwen2_5_vl":  # Qwen2.5-VL's own template, TRL's packaged copy (no hub)
        processor.chat_template = chat.qwen2_5_vl_chat_template
    if chat.has_generation_markers(processor.chat_template):
        return processor, None
    training = chat.get_training_chat_template(processor)
    assert training is not None, "TRL has no training variant of this template"
    return processor, training


@_needs(*TRAIN_EXTRA)
@pytest.mark.parametrize("template", ["example", "qwen2_5_vl"])
def test_trls_vision_collator_batches_the_export_and_learns_only_the_action(
    export: Path, template: str
) -> None:
    sft: Any = pytest.importorskip("trl.trainer.sft_trainer")
    chat: Any = pytest.importorskip("trl.chat_template_utils")
    example = _example()
    processor, chat_template = _processor(example, template)
    # SFTTrainer warns when the end-of-turn token is not learned: the model would never stop
    assert chat.is_chat_template_stop_token_trained(processor, chat_template=chat_template)
    collator = sft.DataCollatorForVisionLanguageModeling(
        processor, assistant_only_loss=True, chat_template=chat_template
    )
    samples = _samples(export)
    batch = collator([dict(s) for s in samples])

    assert {"input_ids", "attention_mask", "pixel_values", "image_grid_thw", "labels"} <= set(batch)
    images = [im for s in samples for im in s["images"]]
    grids = batch["image_grid_thw"].tolist()
    assert len(grids) == len(images)  # one grid per screenshot, in order
    patch, merge = 14, 2
    for (t, gh, gw), image in zip(grids, images, strict=True):
        # Qwen2-VL's resize of this screenshot, computed here from its size
        height, width = _smart_resize(image.height, image.width, example)
        assert (t, gh * patch, gw * patch) == (1, height, width)
    assert batch["pixel_values"].shape[0] == sum(t * h * w for t, h, w in grids)

    at = 0
    for i, sample in enumerate(samples):
        n = len(sample["images"])
        expected = sum(t * h * w // merge**2 for t, h, w in grids[at : at + n])
        at += n
        assert int((batch["input_ids"][i] == processor.image_token_id).sum()) == expected
    _assert_learns_only_the_assistant(batch, samples, processor.tokenizer)


def _assistant_text(messages: list[Row]) -> str:
    """What a sample teaches: each assistant turn's text and its end of turn, in order. The
    turns are taken as they come (a system turn, the user's, the assistant's, or more)."""
    turns = [m["content"] for m in messages if m["role"] == "assistant"]
    assert turns, "a sample without an assistant turn teaches nothing"
    texts = [
        c if isinstance(c, str) else "".join(p["text"] for p in c if p["type"] == "text")
        for c in turns
    ]
    return "".join(text + "<|im_end|>\n" for text in texts)


def _assert_learns_only_the_assistant(batch: Any, samples: list[Row], tokenizer: Any) -> None:
    """The labels keep exactly the assistant's action and its end of turn (so the model learns
    to stop), as the input's own tokens; the system and user turns, the screenshots and the
    padding are masked."""
    for i, sample in enumerate(samples):
        labels, ids = batch["labels"][i], batch["input_ids"][i]
        kept = labels != -100
        assert bool((labels[kept] == ids[kept]).all())  # not shifted: the collator's own ids
        decoded = tokenizer.decode(labels[kept].tolist(), clean_up_tokenization_spaces=False)
        assert decoded == _assistant_text(sample["messages"])
        assert int(kept.sum()) < int(batch["attention_mask"][i].sum())


@_needs(*TRAIN_EXTRA)
def test_the_examples_template_renders_the_export_as_qwen2_5_vls_own(export: Path) -> None:
    chat: Any = pytest.importorskip("trl.chat_template_utils")
    example = _example()
    tokenizer = example.local_tokenizer()
    for sample in _samples(export):
        qwen = tokenizer.apply_chat_template(
            sample["messages"], tokenize=False, chat_template=chat.qwen2_5_vl_chat_template
        )
        assert tokenizer.apply_chat_template(sample["messages"], tokenize=False) == qwen
        assert example.render_text(sample["messages"]) == qwen  # the plain rendering too
        assert qwen.count("<|image_pad|>") == len(sample["images"])


def _smart_resize(height: int, width: int, example: ModuleType) -> tuple[int, int]:
    """Qwen2-VL's resize rule (sides multiples of 28, pixels within the processor's bounds),
    written out here so the test does not check the processor against itself."""
    factor, low, high = 28, example.MIN_PIXELS, example.MAX_PIXELS
    h, w = round(height / factor) * factor, round(width / factor) * factor
    if h * w > high:
        beta = math.sqrt(height * width / high)
        h, w = (
            math.floor(height / beta / factor) * factor,
            math.floor(width / beta / factor) * factor,
        )
    elif h * w < low:
        beta = math.sqrt(low / (height * width))
        h, w = math.ceil(height * beta / factor) * factor, math.ceil(width * beta / factor) * factor
    return h, w


@pytest.mark.parametrize(
    "collate",
    [
        "text",
        pytest.param("tokens", marks=[_needs("transformers", "tokenizers"), SLOW]),
        pytest.param("trl", marks=[_needs(*TRAIN_EXTRA), SLOW]),
    ],
)
def test_the_example_loop_streams_every_sample_into_batches(export: Path, collate: str) -> None:
    rows = _rows(export)
    env = {**os.environ, **OFFLINE}
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), str(export), "--batch-size", "3", "--collate", collate],
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    batches = [line for line in lines if line.startswith("batch ")]
    assert len(batches) == math.ceil(len(rows) / 3)
    images = sum(len(r["images"]) for r in rows)
    assert f"{collate}: {len(rows)} samples, {images} images in " in lines[-1]
    assert "samples/s" in lines[-1]
    if collate != "text":  # token ids and one pixel patch block per batch
        assert all("input_ids(" in b and "pixel_values(" in b for b in batches)


@_needs(*TRAIN_EXTRA)
@SLOW
def test_sft_trainer_trains_a_tiny_qwen2_5_vl_on_the_export_and_its_loss_falls(
    export: Path, tmp_path: Path
) -> None:
    torch: Any = pytest.importorskip("torch")
    chat: Any = pytest.importorskip("trl.chat_template_utils")
    example = _example(SFT_EXAMPLE)
    args = example.parse_args([str(export), "--output", str(tmp_path / "ckpt")])
    trainer = example.build(args)
    processor = trainer.processing_class
    # Qwen2.5-VL's own template, which SFTTrainer swaps for TRL's training variant of it (the
    # one that marks the assistant's turns) to mask everything else
    assert processor.chat_template == chat.qwen2_5_vl_chat_template
    assert trainer.chat_template == chat.qwen2_5_vl_training_chat_template
    samples = list(trainer.train_dataset)
    assert len(samples) == args.batch_size
    assert any(len(s["images"]) == HISTORY for s in samples)
    # what the trainer will compute its loss on: its own collator on the batch
    batch = trainer.data_collator([dict(s) for s in samples])
    assert {"pixel_values", "image_grid_thw", "labels"} <= set(batch)
    _assert_learns_only_the_assistant(batch, samples, processor.tokenizer)
    vision = {n: p.detach().clone() for n, p in trainer.model.named_parameters() if "visual" in n}
    assert vision

    start = time.perf_counter()
    trainer.train()
    elapsed = time.perf_counter() - start
    curve = example.losses(trainer)
    print(f"{len(curve)} steps in {elapsed:.1f} s, loss " + " ".join(f"{x:.3f}" for x in curve))
    assert len(curve) == args.steps == trainer.state.global_step
    # untrained, the model spreads its guess over the vocabulary: cross-entropy ln(V)
    assert abs(curve[0] - math.log(len(processor.tokenizer))) < 0.5
    # the same batch at every step: the loss must fall, well clear of noise
    assert sum(curve[-3:]) / 3 < curve[0] - 0.5
    # the screenshots reach the loss: the vision tower's weights moved too
    moved = [
        n for n, p in trainer.model.named_parameters() if n in vision and not p.equal(vision[n])
    ]
    assert moved, "no gradient reached the vision tower"
    assert torch.isfinite(torch.tensor(curve)).all()


# The page's Python blocks name what no test machine has: a hub model (a tiny Qwen2.5-VL saved
# to a folder stands in, read by the same `from_pretrained` calls) and a GPU (bf16 on a CPU
# needs `use_cpu`). Each swap keeps the line count, so a traceback's line is the page's.
HUB_MODEL = '"Qwen/Qwen2.5-VL-3B-Instruct"'
CPU_SWAP = ("bf16=True,", "bf16=True, use_cpu=True,")
# After a block that builds an SFTTrainer: what it did, for the test to read.
TRAINED_REPORT = """
import json as _json
for _value in list(globals().values()):
    if type(_value).__name__ == "SFTTrainer":
        _state = _value.state
        print("TRAINED " + _json.dumps({
            "steps": _state.global_step,
            "loss": _state.log_history[-1]["train_loss"],
            "samples": len(_value.train_dataset),
        }))
"""


def _python_blocks(text: str) -> list[tuple[str, int, str]]:
    """The page's ```python blocks: the heading of the section each is in, the line its code
    starts on (1-based), and the code."""
    blocks = []
    for m in re.finditer(r"^```python\n(.*?)^```$", text, re.S | re.M):
        headings = re.findall(r"^## (.+)$", text[: m.start()], re.M)
        first = text.count("\n", 0, m.start(1)) + 1
        blocks.append((headings[-1] if headings else "top", first, m.group(1)))
    return blocks


def _block_ids(blocks: list[tuple[str, int, str]]) -> list[str]:
    """A test id per block from its section's heading ("2-supervised-fine-tuning-with-trl")."""
    slugs = [re.sub(r"[^a-z0-9]+", "-", heading.lower()).strip("-") for heading, _, _ in blocks]
    return [
        f"{slug}-{slugs[:i].count(slug) + 1}" if slugs.count(slug) > 1 else slug
        for i, slug in enumerate(slugs)
    ]


BLOCKS = _python_blocks(DOCS.read_text())


def _uses_trl(index: int) -> bool:
    """Whether block `index`'s script imports TRL: it carries the earlier blocks' imports too
    (_as_script), so a block after §2's needs it without naming it."""
    return any("trl" in code for _, _, code in BLOCKS[: index + 1])


def _as_script(text: str, index: int, model: Path | None) -> str:
    """Block `index` as a script, each line at its line of the page (the others blank), after
    the earlier blocks' imports (a reader runs the page in order: a later block uses an earlier
    one's `load_dataset`), with the swaps made."""
    lines = [""] * (text.count("\n") + 1)
    blocks = _python_blocks(text)
    for _, first, code in blocks[:index]:
        for offset, line in enumerate(code.splitlines()):
            if line.startswith(("import ", "from ")):
                lines[first - 1 + offset] = line
    _, first, code = blocks[index]
    if "SFTTrainer(" in code:
        assert HUB_MODEL in code and CPU_SWAP[0] in code, "update HUB_MODEL / CPU_SWAP"
        code = code.replace(HUB_MODEL, repr(str(model))).replace(*CPU_SWAP)
    for offset, line in enumerate(code.splitlines()):
        lines[first - 1 + offset] = line
    return "\n".join(lines) + TRAINED_REPORT


def _tiny_model(folder: Path, export: Path) -> Path:
    """examples/train_sft.py's tiny Qwen2.5-VL and its processor, saved as a hub model is."""
    example = _example(SFT_EXAMPLE)
    processor = example.local_processor(corpus=example.texts(_samples(export)))
    example.tiny_model(processor).save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder


@pytest.mark.parametrize(
    "index",
    [
        pytest.param(
            i,
            marks=[_needs(*TRAIN_EXTRA), SLOW] if _uses_trl(i) else _needs("datasets"),
            id=name,
        )
        for i, name in enumerate(_block_ids(BLOCKS))
    ],
)
def test_the_pages_python_blocks_run_on_real_exports(
    run: Path, export: Path, tmp_path: Path, index: int
) -> None:
    text = DOCS.read_text()
    code = _python_blocks(text)[index][2]
    for fmt in sorted(set(re.findall(r"runs/demo/exports/(\w+)", code))):
        if not (run / "exports" / fmt).exists():  # sft: the `export` fixture's
            done = datagen("export", str(run), "--format", fmt)
            assert done.returncode == 0, done.stdout + done.stderr
    model = _tiny_model(tmp_path / "tiny-qwen2.5-vl", export) if HUB_MODEL in code else None
    (tmp_path / "runs").symlink_to(run.parent)  # the page reads runs/demo/exports/<format>
    (tmp_path / "training_md.py").write_text(_as_script(text, index, model))
    # one thread: see examples/train_sft.py (a second one spins on a shared CPU)
    env = {**os.environ, **OFFLINE, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, "training_md.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
    )
    assert done.returncode == 0, f"docs/training.md, block at line {BLOCKS[index][1]}:\n" + (
        done.stdout + done.stderr
    )
    if "SFTTrainer(" in code:  # it trained: optimizer steps on every sample of the export
        trained = json.loads(done.stdout.rsplit("TRAINED ", 1)[1].splitlines()[0])
        assert trained["steps"] >= 1 and trained["samples"] == len(_rows(export))
        assert math.isfinite(trained["loss"]) and trained["loss"] > 0
