"""The README is a porch and stays true: at most 160 lines, the two set-up commands CI relies on,
a pipeline example that loads, commands whose options exist, and links (README and docs/) that
lead somewhere. Option values are never listed by hand there: `datagen COMMAND --help` says
them, from the types the code checks."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import jsonschema
import pytest
import yaml
from typer.testing import CliRunner

from datagen.cli import app
from datagen.config import parse_pipeline

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
DOCS = sorted((REPO / "docs").rglob("*.md"))
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```", text, flags=re.M | re.S)


def _anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    keep = "".join(c for c in heading.strip().lower() if c.isalnum() or c in " -_")
    return keep.replace(" ", "-")


def test_readme_is_a_porch() -> None:
    lines = README.read_text().splitlines()
    assert len(lines) <= 160, f"README.md has {len(lines)} lines; move reference text to docs/"


def test_readme_keeps_the_two_commands() -> None:
    """`.ci/run` runs the README's test command; the demo is the embedded main job."""
    text = README.read_text()
    assert "bash scripts/demo.sh     # set up, then run the embedded main job" in text
    assert "bash scripts/test.sh     # set up, then run the tests" in text
    assert "bash scripts/test.sh" in (REPO / ".ci" / "run").read_text()


def test_readme_pipeline_example_loads_and_matches_the_schema() -> None:
    (block,) = _blocks(README.read_text(), "yaml")
    data = yaml.safe_load(block)
    parse_pipeline(data)
    schema = json.loads((REPO / "schemas" / "pipeline.schema.json").read_text())
    jsonschema.validate(data, schema)
    # The editor line it shows points at the committed schema, from pipelines/.
    target = block.splitlines()[0].split("$schema=", 1)[1]
    assert (REPO / "pipelines" / target).resolve().is_file()


def _commands(text: str) -> list[list[str]]:
    """`datagen …` invocations in the text's bash blocks, as argument lists."""
    found = []
    for block in _blocks(text, "bash"):
        for line in block.splitlines():
            line = line.split("  #", 1)[0].strip()
            if "datagen " not in line or line.startswith("bash "):
                continue
            words = shlex.split(line[line.index("datagen ") :])[1:]
            args = [w.strip("[]") for w in words]  # `[--check]`: an optional flag
            found.append(args)
    return found


@pytest.mark.parametrize("doc", [README, REPO / "docs" / "guide.md"], ids=lambda p: p.name)
def test_commands_shown_exist_with_their_options(doc: Path) -> None:
    commands = _commands(doc.read_text())
    assert len(commands) >= 5
    runner = CliRunner()
    for args in commands:
        words = []
        for arg in args:
            if arg.startswith("-") or "/" in arg or "." in arg or arg.isupper():
                break
            words.append(arg)
        result = runner.invoke(app, [*words, "--help"], env={"COLUMNS": "200"})
        assert result.exit_code == 0, f"{doc.name}: datagen {' '.join(words)}: {result.output}"
        for flag in (a.split("=", 1)[0] for a in args if a.startswith("-")):
            assert flag in result.output, f"{doc.name}: `datagen {' '.join(args)}`: no {flag}"


@pytest.mark.parametrize("doc", [README, *DOCS], ids=lambda p: str(p.relative_to(REPO)))
def test_links_lead_somewhere(doc: Path) -> None:
    for target in LINK.findall(doc.read_text()):
        if "://" in target or target.startswith("mailto:"):
            continue
        path, _, anchor = target.partition("#")
        file = (doc.parent / path).resolve() if path else doc
        assert file.exists(), f"{doc.name}: link to {target}: no such file"
        if anchor and file.suffix == ".md":
            headings = re.findall(r"^#+ (.*)$", file.read_text(), flags=re.M)
            anchors = {_anchor(h) for h in headings}
            assert anchor in anchors, f"{doc.name}: link to {target}: no such heading"
