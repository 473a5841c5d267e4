"""The split groups an app's tasks where the source names no site (an IP host: by host and
port, or by the app's folder when the run's scope is a folder) and picks the split closest to
the share asked when clusters are few (the bundled sites: five clusters), saying so."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pyarrow.dataset as pds

from datagen.export import export_output, parse_options
from datagen.export.balance import choose
from datagen.export.places import places, site_label, url_place
from tests.unit.synthetic_run import Task, write_run

APPS = ["todo", "notes", "shop", "mail", "wiki", "chat"]


def _ip_tasks(port_per_app: bool) -> list[Task]:
    """Four tasks of each app, on one IP host: an app per port, or an app per folder."""
    tasks = []
    for n, app in enumerate(APPS):
        base = f"http://10.0.0.5:{8000 + n}/" if port_per_app else f"http://10.0.0.5:8000/{app}/"
        tasks += [Task(app, f"t{k}", url=f"{base}index.html?task={k}") for k in range(4)]
    return tasks


def _sides(folder: Path) -> dict[str, set[str]]:
    """The export's split: app → the sides its samples landed on."""
    found: dict[str, set[str]] = {}
    for split in ("train", "validation"):
        for f in (folder / "data").glob(f"{split}-part-*.parquet"):
            for row in pds.dataset(f).to_table(columns=["task_id"]).to_pylist():
                found.setdefault(row["task_id"].split("-")[0], set()).add(split)
    return found


def test_url_place_is_the_domain_the_host_and_port_or_the_scope_folder() -> None:
    assert url_place("https://app.example.com:8443/x") == "example.com"
    assert url_place("http://10.0.0.5:8000/todo/index.html", "origin") == "10.0.0.5:8000"
    assert url_place("http://10.0.0.5:8000/todo/index.html") == "http://10.0.0.5:8000/todo/"
    assert url_place("http://localhost/a/b", ["http://localhost/a/"]) == "http://localhost/a/"
    assert url_place("http://localhost/a/b", ["localhost"]) == "localhost:80"
    assert url_place("site://shop/") is None
    assert places({"site": "", "start_url": "http://10.0.0.5:81/"}) == {"10.0.0.5:81"}
    assert site_label({"site": "", "start_url": "http://10.0.0.5:81/a/"}) == "10.0.0.5:81"


def test_tasks_of_one_app_on_an_ip_host_never_straddle_the_split(tmp_path: Path) -> None:
    for port_per_app, scope in [(True, "origin"), (True, "site"), (False, "site")]:
        out = write_run(tmp_path / f"out-{port_per_app}-{scope}", [_ip_tasks(port_per_app)])
        run = json.loads((out / "_run.json").read_text())
        run["pipeline"]["run"] = {"scope": scope}
        run["pipeline"]["sources"] = [{"type": "urls"}]
        (out / "_run.json").write_text(json.dumps(run))
        folder = tmp_path / f"sft-{port_per_app}-{scope}"
        export_output(str(out), parse_options("sft", validation=0.3), str(folder))
        sides = _sides(folder)
        assert set(sides) == set(APPS)
        assert all(len(s) == 1 for s in sides.values()), sides  # an app is on one side
        assert sum(s == {"validation"} for s in sides.values()) == 2  # 8 of 24 groups: 33%
        body = (folder / "README.md").read_text()
        assert "Sites:  (" not in body  # was empty: an IP host names no site
        assert f"Sites: 10.0.0.5:8000 ({8 if port_per_app else 48})" in body


def test_few_sites_give_the_validation_split_closest_to_the_share(tmp_path: Path) -> None:
    sizes = {"alpha": 1, "beta": 2, "gamma": 3, "delta": 4, "eps": 5}  # tasks per site
    tasks = [Task(site, f"t{k}") for site, n in sizes.items() for k in range(n)]
    out = write_run(tmp_path / "out", [tasks[::2], tasks[1::2]])  # a site over both shards
    folder = tmp_path / "sft"
    result = export_output(str(out), parse_options("sft", validation=0.1), str(folder))
    sides = _sides(folder)
    assert all(len(s) == 1 for s in sides.values()), sides
    validation = sum(sizes[site] for site, s in sides.items() if s == {"validation"})
    assert validation in (1, 2)  # 1.5 of 15 asked: one or two groups are 0.5 off, none closer
    summary = result.summary()
    assert f"split: validation {validation} of 15 task groups" in summary
    assert "points" in summary and "clusters train 4, validation 1" in summary
    body = (folder / "README.md").read_text()
    assert f"validation: {validation} of 15 task groups" in body and "asked 10.0%" in body
    assert "Near-duplicates are grouped because" in body
    assert "- `minimal`: replayed" in body and "- `not_reproduced`: a replay" in body


def test_choose_is_the_closest_subset_with_train_and_validation_never_empty() -> None:
    assert choose([5, 5, 5, 5, 5], 0.1) == {0}  # 0% and 20% are as far: validation not empty
    assert choose([7], 0.5) == set()  # one cluster: train
    assert choose([7], 0.5, written_train=3) == {0}  # two clusters: validation gets one
    assert choose([1, 1], 0.5, written_validation=5) == set()  # 5 of 7 already: none more
    best = choose([3, 9, 4, 1, 6], 0.3)  # 6.9 of 23: 6 = 6 alone or 4 + 1 + ... none at 7
    assert abs(sum([3, 9, 4, 1, 6][i] for i in best) - 6.9) == min(
        abs(sum(c) - 6.9) for n in range(6) for c in itertools.combinations([3, 9, 4, 1, 6], n)
    )
    many = choose([1] * 40, 0.25)  # greedy past EXACT clusters: within one cluster
    assert len(many) == 10
    assert choose([2] * 20, 1.0) != set(range(20))  # train never empty
