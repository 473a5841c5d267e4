"""Our own LocalCluster's periodic upkeep is slowed (`runtime.driver.QUIET_CLUSTER`): each key
is one of Dask's, so a rename in a Dask release fails here rather than being silently ignored,
and each value is slower than Dask's default, never faster."""

from __future__ import annotations

import dask
from dask.utils import parse_timedelta

from datagen.runtime.driver import QUIET_CLUSTER


def test_each_quiet_setting_is_a_dask_key_and_slower_than_its_default() -> None:
    for key, ours in QUIET_CLUSTER.items():
        default = dask.config.get(key)  # KeyError for a key Dask does not have
        assert parse_timedelta(ours) > parse_timedelta(default), (key, ours, default)
