"""Use cases behind the CLI, one module per family of commands.

Each function takes paths, options and settings, calls the loader, analysis, renderer or
upstream clients, and returns a result object; printing is the CLI's job. Callers import
a use case from its module (`from reporter.app.report import draft`), so a reader can
follow a command to the file that does its work, and a command pays only for its own
family: `report config show` never loads the analysis.

- `report`: `load_and_analyze`, `draft`, `render_draft`, `diff_runs`, `init_manifest`,
  `lint_reports`, `report_status`, `preview`, `seen_before` (`report analyze`, `draft`,
  `diff`, `init`, `lint`, `status`, `preview`)
- `upstream`: `search_upstream`, `triage`, `sync_upstream`, `index_import`,
  `index_export`, `upstream_draft`, `upstream_file`, `record_upstream_issue`
  (`report upstream ...`, `report sync`, `report index ...`)
- `issues`, `filing`: the issue index and the drafting and filing behind `upstream`
- `collect`: `collect` (`report collect`)
- `watch`: `watch` (`report watch`)
- `settings`: `Context`, `auth_status` (`report auth status`, `report config show`)
"""
