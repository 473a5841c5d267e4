"""The one exception tree of datagen.

    DatagenError                 base; never raised itself
    ├── ConfigError              the pipeline file is wrong: names the key and the fix
    ├── SourceError              a task list cannot be read (missing file, bad line)
    ├── BrowserUnavailable       no Chromium to launch: says what to install
    ├── OutputError              the output location cannot be used (other run there, not writable)
    ├── EngineNotReady           the model server does not answer /health and /v1/models
    └── WorkersUnavailable       no Dask worker can run the run's shards: names them and the fix

Per-task failures are *not* exceptions that escape a shard: they become `Reject` rows with a
reason code (see `records.RejectReason`).
"""


class DatagenError(Exception):
    """Base of every error datagen raises on purpose."""


class ConfigError(DatagenError):
    """A pipeline file problem, raised before any browser starts.

    `path` is the dotted YAML path of the bad key (e.g. ``browser.viewport.width``).
    """

    def __init__(self, message: str, path: str = "", fix: str = "") -> None:
        self.path = path
        self.fix = fix
        text = f"{path}: {message}" if path else message
        if fix:
            text += f"\n  fix: {fix}"
        super().__init__(text)


class SourceError(DatagenError):
    """A task list that cannot be read: names the file, the line and the problem."""

    def __init__(self, message: str, fix: str = "") -> None:
        super().__init__(message)
        self.fix = fix


class BrowserUnavailable(DatagenError):
    """No Chromium could be found or launched."""


class OutputError(DatagenError):
    """The output location cannot take this run."""


class EngineNotReady(DatagenError):
    """The model server is unreachable or not ready."""


class WorkersUnavailable(DatagenError):
    """No worker of the cluster can run the run's shards (none joined, none could start its
    browser, or every one that could was lost), for longer than the run waits."""

    def __init__(self, message: str, fix: str = "") -> None:
        self.fix = fix
        super().__init__(f"{message}. fix: {fix}" if fix else message)
