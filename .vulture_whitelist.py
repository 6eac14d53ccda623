"""Names vulture finds unused that are used: by a library that reads them, or by readers of
the data they are part of. Reviewed: each entry says why it stays (``scripts/test`` runs
vulture over the product with this file; a function a decorator registers, such as a typer
command, a pydantic validator or a conformance check, is used: ``[tool.vulture]``)."""

# ruff: noqa: B018
from vulture.whitelist_utils import Whitelist

_ = Whitelist()

# pydantic and pydantic-settings read these by name
_.model_config  # every model's configuration
_.settings_customise_sources  # Settings: the order of its sources (a hook)
_.env_settings  # the hook's parameters, named by pydantic-settings
_.dotenv_settings
_.file_secret_settings
_.get_field_value  # sources.py: a settings source's abstract method

# libraries read these attributes after the product sets them
_.overflow  # rich: a table column's overflow
_.metavar  # click: an option's metavar in --help
_.short_help  # click: a command's line in its group's --help
_.should_exit  # uvicorn: the server's loop stops when it is set
_.mtime  # tarfile: a member's modification time, written into the archive

# fields of models that are data: written to JSON for readers outside the code
_.breaking_resolved_pct  # LeaderboardRow: results.json, the leaderboard's columns
_.partially_resolved_pct
_.work_in_progress_pct
_.regression_pct
_.no_op_pct
_.breaking_resolved_count
_.partially_resolved_count
_.work_in_progress_count
_.regression_count
_.no_op_count
_.error_count
_.tamper_detected_count
_.fail_to_pass_total  # InstanceRow: results.json's row per instance
_.pass_to_pass_total
_.benchmark  # ResultsFile: results.json names its benchmark
_.created_at  # Instance: the dataset row's field
_.python_frozen  # Recipe: from recipes.json (scripts/make_recipes.py), the specs' provenance
_.spec_packages
_.validation_cached  # a sweep's record: docs/validation-records.jsonl
_.env_image  # PreparedInstance: the environment image an instance's image was built on
_.failure_kind  # the setup agent's result: why it failed (auth, turn_limit, ...)
_.oom_killed  # ExecResult: the sandbox interface says when the memory limit killed a command

# the reference participants' API that tests drive
_.HostileParticipant  # frontends/reference_participants/hostile.py: the hostile cases' participant
_.received  # ScriptedParticipant: every message it received
_.MODIFIED  # file_snapshot.py: Docker's change kind 0, named beside ADDED and DELETED

# the tools' argument models (sandbox_tools/schemas.py): each field is an argument of the
# tool's published schema, read from the model by pydantic when a call is validated
_.file_text
_.old_str
_.new_str
_.insert_line
_.insert_text
_.case_insensitive

# the documentation's build (scripts/mkdocs_hooks.py, a MkDocs hook) fills the reference
# pages with the generated text
_.fill

# what a long-lived server holds, read by its tests: the containers the tools are installed in
_.installed_sandboxes

# the command functions: the CLI's table (frontends/cli/app.py) names each as "module:function"
# and imports it when the command is chosen; tests/test_cli_commands.py checks each is there
_.assess_cmd
_.envs_ls
_.envs_plan
_.envs_prune
_.config_cmd
_.images_build
_.images_ls
_.sandbox_ls
_.sandbox_check
_.gc_cmd
_.inspect_cmd
_.instances_ls
_.tasks_collect
_.tasks_validate
_.gold
_.empty
_.scripted
_.claude
_.report_cmd
_.run_cmd
_.demo_cmd
_.serve_command
_.validate_cmd
_.validation_report_cmd
