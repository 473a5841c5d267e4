"""Observability: logging set-up, the live progress display, the end-of-run report."""
