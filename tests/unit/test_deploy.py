"""The deployment recipes: the dask-kubernetes manifest against the operator's own schema, the
worker image's Dockerfile, the commands docs/deploy.md gives, and the bundled sites as package
data. No Docker, no Kubernetes: what runs here (the worker command from the wheel) is in
tests/integration/test_wheel.py."""

from __future__ import annotations

import copy
import json
import re
import shlex
import tomllib
from pathlib import Path
from typing import Any

import jsonschema
import typer
import yaml

from datagen.cli import app
from datagen.source import BUNDLED_SITES
from datagen.source.readers import list_sites
from tests.helpers import REPO, dockerfile

MANIFEST = REPO / "deploy" / "k8s" / "daskcluster.yaml"
DEPLOY_DOC = REPO / "docs" / "deploy.md"
# The operator's CRD schema (dask-kubernetes on PyPI ships it in its Helm chart), descriptions
# removed. Refresh: pip download --no-deps dask-kubernetes, then take spec.versions[0].schema
# of dask_kubernetes/operator/deployment/helm/dask-kubernetes-operator/crds/daskcluster.yaml.
CRD = Path(__file__).resolve().parents[1] / "fixtures" / "k8s" / "daskcluster-crd-v1.json"
WORKER_CMD = ["dask", "worker", "--nthreads", "1", "--nworkers", "1"]

INSTRUCTIONS = {
    "FROM", "RUN", "CMD", "LABEL", "EXPOSE", "ENV", "ADD", "COPY", "ENTRYPOINT", "VOLUME",
    "USER", "WORKDIR", "ARG", "ONBUILD", "STOPSIGNAL", "HEALTHCHECK", "SHELL",
}  # fmt: skip


def strict(schema: Any) -> Any:
    """The CRD schema as the API server's strict field validation reads it: an object's
    unknown keys are errors unless it preserves unknown fields."""
    if isinstance(schema, list):
        return [strict(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    schema = {k: strict(v) for k, v in schema.items()}
    if (
        "properties" in schema
        and "additionalProperties" not in schema
        and not schema.get("x-kubernetes-preserve-unknown-fields")
    ):
        schema["additionalProperties"] = False
    return schema


def test_daskcluster_manifest_validates_against_the_operators_crd() -> None:
    manifest = yaml.safe_load(MANIFEST.read_text())
    crd = json.loads(CRD.read_text())
    assert manifest["apiVersion"] == f"{crd['group']}/{crd['version']}" == "kubernetes.dask.org/v1"
    assert manifest["kind"] == crd["kind"] == "DaskCluster"
    assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", manifest["metadata"]["name"])
    spec_schema = strict(crd["openAPIV3Schema"]["properties"]["spec"])
    errors = sorted(
        jsonschema.Draft7Validator(spec_schema).iter_errors(manifest["spec"]),
        key=lambda e: list(e.absolute_path),
    )
    assert not errors, "\n".join(
        f"spec.{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in errors
    )


def test_the_strict_check_catches_a_misspelt_key() -> None:
    """The check above is worth something: a typo the API server would refuse is caught."""
    manifest = yaml.safe_load(MANIFEST.read_text())
    crd = json.loads(CRD.read_text())
    bad = copy.deepcopy(manifest)
    bad["spec"]["worker"]["spec"]["containers"][0]["arg"] = ["dask", "worker"]
    validator = jsonschema.Draft7Validator(strict(crd["openAPIV3Schema"]["properties"]["spec"]))
    assert any("'arg'" in e.message for e in validator.iter_errors(bad["spec"]))
    del bad["spec"]["scheduler"]
    assert any("'scheduler' is a required" in e.message for e in validator.iter_errors(bad["spec"]))


def test_manifest_workers_run_the_images_command_with_one_thread() -> None:
    manifest = yaml.safe_load(MANIFEST.read_text())
    (worker,) = manifest["spec"]["worker"]["spec"]["containers"]
    (scheduler,) = manifest["spec"]["scheduler"]["spec"]["containers"]
    assert worker["args"][: len(WORKER_CMD)] == WORKER_CMD
    assert worker["args"][worker["args"].index("--name") + 1] == "$(DASK_WORKER_NAME)"
    assert scheduler["args"] == ["dask", "scheduler"]
    assert worker["image"] == scheduler["image"]  # the same dask and distributed on both
    ports = {p["name"]: p["containerPort"] for p in scheduler["ports"]}
    assert ports == {"tcp-comm": 8786, "http-dashboard": 8787}
    assert manifest["spec"]["scheduler"]["service"]["type"] == "ClusterIP"  # not exposed


def test_dockerfile_builds_the_wheel_and_runs_one_single_threaded_worker() -> None:
    steps = dockerfile()
    assert all(word in INSTRUCTIONS for word, _ in steps), [w for w, _ in steps]
    froms = [rest for word, rest in steps if word == "FROM"]
    assert len(froms) == 2 and froms[0].endswith(" AS wheel")
    args = {rest.split("=", 1)[0]: rest.split("=", 1)[1] for w, rest in steps if w == "ARG"}
    assert "bookworm" in args["PYTHON_IMAGE"]  # the Debian release the tests run Chromium on
    runs = " ".join(rest for word, rest in steps if word == "RUN")
    assert "pip wheel" in runs and "--no-deps" in runs
    assert re.search(r"apt-get install .*\bchromium\b", runs)
    assert re.search(r"pip install .*/datagen-\*\.whl", runs)
    assert any(w == "COPY" and rest.startswith("--from=wheel ") for w, rest in steps)
    assert ("USER", "1000") in steps  # not root, and numeric (Kubernetes' runAsNonRoot)
    exec_form = {w: json.loads(rest) for w, rest in steps if w in ("CMD", "ENTRYPOINT")}
    assert exec_form["ENTRYPOINT"] == ["tini", "--"]
    assert exec_form["CMD"] == WORKER_CMD
    # Every file the build copies from the context exists (the constraints glob may match none).
    for word, rest in steps:
        if word == "COPY" and not rest.startswith("--from"):
            *sources, _ = shlex.split(rest)
            for source in sources:
                if "*" not in source:
                    assert (REPO / source).exists(), source


def test_deploy_doc_gives_the_same_worker_command_and_real_files() -> None:
    text = DEPLOY_DOC.read_text()
    commands = re.findall(r"^\s*(dask worker tcp://\S+ .*?)\s*(?:#.*)?$", text, re.M)
    assert commands, "docs/deploy.md gives no `dask worker tcp://…` command"
    for command in commands:
        words = shlex.split(command)
        assert words[:2] == ["dask", "worker"]
        assert words[words.index("--nthreads") + 1] == "1"
    for path in ("deploy/Dockerfile", "deploy/k8s/daskcluster.yaml"):
        assert path in text
    runs = re.findall(r"^\s*datagen run (.*)$", text, re.M)
    used = {flag for line in runs for flag in re.findall(r"(?<!\S)(--?[a-z][-a-z]*)", line)}
    command = typer.main.get_command(app).commands["run"]  # type: ignore[attr-defined]
    known = {opt for param in command.params for opt in param.opts}
    assert "--address" in used and used <= known, used - known


def test_bundled_sites_are_package_data() -> None:
    """Every file of every bundled site is matched by pyproject's package-data, so a wheel
    carries them (the wheel itself is built in tests/integration/test_wheel.py)."""
    package = BUNDLED_SITES.parent
    assert package == REPO / "datagen" and len(list_sites(BUNDLED_SITES)) >= 5
    patterns = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"
    ]["datagen"]
    matched = {p for pattern in patterns for p in package.glob(pattern) if p.is_file()}
    files = {p for p in BUNDLED_SITES.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    assert files and files <= matched, sorted(str(p) for p in files - matched)
