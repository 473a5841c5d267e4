"""The browser: one Chromium per worker (`host`), a fresh context and page per episode
(`session`), observation, actions, the URL guard and egress proxy, and what a failed browser
call means for the episode (`failures`: what a failure is, below `host` and `session`;
`triage`: reading one, above them). Chromium is driven through Playwright here.

A regular package (not a namespace one) so that the import contracts see its modules
(import-linter and grimp skip a folder without `__init__.py`); see docs/architecture.md."""
