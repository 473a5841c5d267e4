"""The sink: storage (local and S3), a shard's parts then its marker last (`writer`), leases,
the manifest and dataset card, verification and reading a dataset back. The only package that
writes output.

A regular package (not a namespace one) so that the import contracts see its modules
(import-linter and grimp skip a folder without `__init__.py`); see docs/architecture.md."""
