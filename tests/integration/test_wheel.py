"""A worker installed from the wheel, not from the checkout: build the wheel, install it in a
fresh virtualenv, start a scheduler and a worker from that virtualenv (outside the
repository, with the Dockerfile's command), and run a pipeline against them with
`datagen run --address`.

The fresh virtualenv borrows the dev virtualenv's third-party packages through a `.pth` line
(appended after its own site-packages, and not a site dir, so the dev venv's editable hook is
never run); datagen itself is only the wheel's copy, and the test checks that the worker
imported that copy and served the sites from it. Before the sites were package data, such a
worker served 404s: every task `navigation_failed`, and the run said "complete".
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path

import pytest
import yaml

from datagen.engine.sim.server import free_port
from tests.helpers import dockerfile

# building the wheel, installing it and running a worker from it: each step bounded at 300 s
pytestmark = [
    pytest.mark.slow,
    pytest.mark.cluster,
    pytest.mark.browser,
    pytest.mark.timeout(1200),
]
REPO = Path(__file__).resolve().parents[2]


def _setuptools_ok() -> bool:
    major = int(version("setuptools").split(".")[0])
    return major >= 77  # pyproject's build requirement: then the build needs no download


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtualenv with datagen installed from a wheel built from a copy of the sources."""
    work = tmp_path_factory.mktemp("wheel")
    source = work / "src"  # a copy: the build writes build/ and *.egg-info next to its input
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, source / name)
    shutil.copytree(
        REPO / "datagen", source / "datagen", ignore=shutil.ignore_patterns("__pycache__")
    )
    offline = ["--no-build-isolation"] if _setuptools_ok() else []  # else pip fetches setuptools
    pip = [sys.executable, "-m", "pip"]
    subprocess.run(
        [*pip, "wheel", "--no-deps", "-q", "-w", str(work / "dist"), *offline, str(source)],
        check=True,
        timeout=300,
    )
    (wheel,) = (work / "dist").glob("datagen-*.whl")
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(
        subprocess.check_output(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            text=True,
        ).strip()
    )
    dev = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (site / "zz_dev_site_packages.pth").write_text("\n".join(sorted(dev)) + "\n")
    subprocess.run(
        [*pip, "--python", str(python), "install", "-q", "--no-deps", "--no-index", str(wheel)],
        check=True,
        timeout=300,
    )
    # The console script pip writes for dask, had dask been installed into this venv.
    (venv / "bin" / "dask").write_text(
        f"#!{python}\nimport sys\nfrom dask.__main__ import main\n"
        "if __name__ == '__main__':\n    sys.exit(main())\n"
    )
    (venv / "bin" / "dask").chmod(0o755)
    return venv


def _env(venv: Path, **extra: str) -> dict[str, str]:
    """The environment of a process of the fresh venv: its bin first, nothing of the repo."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}:{env.get('PATH', '')}"
    return {**env, "VIRTUAL_ENV": str(venv), **extra}


def test_the_wheel_carries_the_sites_and_serves_them(fresh: Path) -> None:
    """Outside the repository, the installed datagen reads and serves its bundled sites."""
    probe = (
        "import datagen, urllib.request\n"
        "from datagen.source import BUNDLED_SITES, load_tasks\n"
        "from datagen.source.readers import list_sites\n"
        "from datagen.source.serve import SiteServer\n"
        "with SiteServer() as s:\n"
        "    page = urllib.request.urlopen(s.resolve('site://todo/'), timeout=10).read()\n"
        "print(datagen.__file__, BUNDLED_SITES, ','.join(list_sites(BUNDLED_SITES)),\n"
        "      b'<html' in page.lower())\n"
    )
    out = subprocess.run(
        [fresh / "bin" / "python", "-c", probe],
        capture_output=True,
        text=True,
        cwd=fresh.parent,
        env=_env(fresh),
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    module, sites, names, html = out.stdout.split()
    assert module.startswith(str(fresh)) and sites.startswith(str(fresh)), out.stdout
    # PEP 561: a user's type checker reads the installed package's annotations
    assert (Path(module).parent / "py.typed").is_file()
    assert names == "settings,shop,signup,table,todo" and html == "True"


@pytest.fixture(scope="module")
def cluster(fresh: Path) -> Iterator[str]:
    """A scheduler and one worker, both from the fresh venv: the worker started with the
    Dockerfile's own command (CMD), its scheduler given as the operator gives it (env)."""
    cmd = next(json.loads(rest) for word, rest in dockerfile() if word == "CMD")
    assert cmd[:2] == ["dask", "worker"]
    home = fresh.parent
    logs = [open(home / name, "w") for name in ("scheduler.log", "worker.log")]  # noqa: SIM115
    address = f"tcp://127.0.0.1:{free_port()}"  # known now: both start at once
    scheduler = ["dask", "scheduler", "--host", "127.0.0.1", "--port", address.rsplit(":", 1)[1]]
    scheduler += ["--dashboard-address", "127.0.0.1:0"]
    procs = [
        subprocess.Popen(
            command,
            cwd=home,
            env=_env(fresh, **extra),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        for command, extra, log in (
            (scheduler, {}, logs[0]),
            ([*cmd, "--host", "127.0.0.1"], {"DASK_SCHEDULER_ADDRESS": address}, logs[1]),
        )
    ]
    try:
        from distributed import Client

        try:
            with Client(address, timeout=60) as client:  # retries until the scheduler listens
                client.wait_for_workers(1, timeout=60)
        except (OSError, TimeoutError) as exc:
            said = "".join((home / name).read_text() for name in ("scheduler.log", "worker.log"))
            raise AssertionError(said) from exc
        yield address
    finally:
        for proc in reversed(procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in reversed(procs):
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        for log in logs:
            log.close()


def _pipeline(folder: Path, sites: str | None = None) -> Path:
    source: dict[str, object] = {"type": "sites", "sites": ["todo", "signup"]}
    if sites:
        source["dir"] = sites
    spec = {
        "name": "wheel-worker",
        "sources": [source],
        "cluster": {"sessions_per_worker": 3},  # --address comes from the command line
        "run": {"max_steps": 1, "limit": 4, "tasks_per_shard": 2},
        "output": {"uri": "unused"},
    }
    path = folder / "pipeline.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def _datagen(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The driver: the dev venv's datagen (the checkout), as a user would run it."""
    return subprocess.run(
        [sys.executable, "-m", "datagen", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "COLUMNS": "200"},
        timeout=300,
    )


def test_a_worker_from_the_wheel_runs_a_pipeline(fresh: Path, cluster: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = _datagen(
        "run", str(_pipeline(tmp_path)), "--address", cluster, "-o", str(out), cwd=tmp_path
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{cluster} (--address)" in result.stdout  # the plan says where it runs
    manifest = json.loads((out / "_manifest.json").read_text())
    assert manifest["complete"] and manifest["tables"]["episodes"]["rows"] > 0
    assert not manifest["reject_reasons"].get("navigation_failed")

    def facts() -> dict[str, str]:  # defined here: sent by value, runs on the worker
        import datagen
        from datagen.source import BUNDLED_SITES

        return {"module": datagen.__file__ or "", "sites": str(BUNDLED_SITES)}

    from distributed import Client

    with Client(cluster, timeout=30) as client:
        (seen,) = client.run(facts).values()
    site = fresh / "lib"
    assert seen["module"].startswith(str(site)), seen  # the wheel's copy, not the checkout
    assert seen["sites"].startswith(str(site)) and not seen["sites"].startswith(str(REPO))


def test_a_worker_whose_datagen_lacks_the_sites_stops_the_run_at_setup(
    fresh: Path, cluster: str, tmp_path: Path
) -> None:
    """The failure the wheel used to have, made on purpose: the installed copy's sites
    removed. The run stops before any shard with the reason and the fix (exit 2), instead of
    404s and a "complete" run of rejects."""
    (installed,) = (fresh / "lib").glob("python3*/site-packages/datagen/sites")
    hidden = installed.with_name("sites.hidden")
    installed.rename(hidden)
    try:
        result = _datagen(
            "run",
            str(_pipeline(tmp_path)),
            "--address",
            cluster,
            "-o",
            str(tmp_path / "out"),
            cwd=tmp_path,
        )
    finally:
        hidden.rename(installed)
    text = " ".join((result.stdout + result.stderr).split())
    assert result.returncode == 2, text
    assert "this worker cannot serve the pipeline's sites" in text, text
    assert "lacks its bundled sites" in text and "Traceback" not in text, text
