"""The evaluation reports: Markdown, JSON and PNG for each `groundsense eval` report command, built from
:mod:`..statistics` and the caches."""
