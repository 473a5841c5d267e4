"""The exception tree of datagen: every exception class datagen defines, the module it lives
in, and what it means. Two tiers (docs/STYLE habit 6): a user's or a setup's error fails fast
and says the fix; a failure of one episode becomes data, a `Reject` row with a reason code,
and never aborts a shard. Besides them: one failure of a shard (a dead browser: the shard is
retried), signals that datagen catches and turns into one of those, and a warning.
tests/unit/test_errors_tree.py fails when a class is missing here, is drawn under another
parent or module than its own, or is drawn but no longer exists.

User and setup errors: raised before or instead of a run, printed by the CLI with their fix.

    Exception
    └── DatagenError               errors               base; never raised itself
        ├── ConfigError            errors               a pipeline key is wrong; says the fix
        ├── SourceError            errors               a task list cannot be read (file, bad line)
        ├── BrowserUnavailable     errors               no Chromium to launch: says what to install
        ├── OutputError            errors               the output cannot take this run
        │   └── PartError          sink.checked         a committed part fails its checks: the shard
        ├── EngineNotReady         errors               the model server is not reachable or ready
        ├── ExportError            errors               an export cannot be made (source, options, folder)
        └── WorkersUnavailable     errors               no Dask worker can run the shards; the fix

Per-episode failures: caught by the episode's triage (pipeline.failures, browser.triage), each
becomes a `Reject` row; its reason in brackets.

    Exception
    ├── NavigationFailed           browser.navigation   the start URL did not load [its `reason`]
    ├── PageMemoryExceeded         browser.memory       the page outgrew its ceiling [page_memory]
    ├── StepTimedOut               browser.failures     a step overran its timeout [timeout_step]
    ├── CheckFailed                browser.failures     the success check raised [check_error]
    ├── Straggling                 pipeline.straggler   far slower than its peers [straggler]
    └── PolicyFailure              policy.vlm           the model gave no action [its `reason`]

Shard failures: the shard is not committed; Dask runs it again on a fresh browser.

    Exception
    └── BrowserDied                browser.failures     Chromium is gone or stopped answering

Signals: caught inside datagen and turned into one of the above (or into an action error, an
annotation reject, an HTTP answer).

    Exception
    ├── CheckNotBoolean            browser.failures     check.js gave no true/false → CheckFailed
    ├── NameNotResolved            browser.guard        DNS has no address for it → dns_failed
    ├── EngineError                engine.wire          a model call got no answer → PolicyFailure
    │   ├── EngineRejected         engine.wire          refused (HTTP 4xx, a redirect): resending cannot help
    │   ├── EngineUnavailable      engine.wire          no connection, timeouts or 5xx every time
    │   └── BadAnswer              engine.wire          an answer not of its endpoint's shape or size
    │       └── MetricsUnreadable  engine.wire          /metrics without finite gauges: limit kept
    ├── FileProblem                loading              a file is not text or YAML → ConfigError, …
    └── ApiError                   engine.sim.protocol  the stand-in's answer to a bad request
    ValueError
    ├── BadUrl                     url                  a URL that does not parse → bad_url
    ├── ModelOutputError           engine.profiles      the model's text fails its schema
    └── OffScreen                  policy.translate     the model's point is off the image

Warnings: issued with `warnings.warn`, never raised.

    UserWarning
    └── UnreadableMarker           sink.writer          a marker not of the sink's shape: skipped
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


class ExportError(DatagenError):
    """`datagen export` cannot make this export: the source is not a datagen output, an option
    does not apply to the format, or the export folder holds another export; says the fix."""


class EngineNotReady(DatagenError):
    """The model server is unreachable or not ready."""


class WorkersUnavailable(DatagenError):
    """No worker of the cluster can run the run's shards (none joined, none could start its
    browser, or every one that could was lost), for longer than the run waits."""

    def __init__(self, message: str, fix: str = "") -> None:
        self.fix = fix
        super().__init__(f"{message}. fix: {fix}" if fix else message)
