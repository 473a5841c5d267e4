"""What a user sees of a run, no Dask here: logging set-up (logs), the worker's counters and rates
(meter; runtime.metrics hands them to Dask), the live progress display (progress), and the run
plan and end-of-run summary the CLI prints (summary)."""
