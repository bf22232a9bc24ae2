"""The decision-first report and the sweep viewer: one model of a sweep, rendered as Markdown,
as a self-contained HTML overview with plots, and as the per-task and per-cell pages of
``wfbench view`` (see ``docs/report.md``)."""
