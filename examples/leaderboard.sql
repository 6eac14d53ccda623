-- SWE-bench Verified leaderboard: one row per submission (results file), its shards merged.
-- `results` is the view over the leaderboard repository's results/*.json, as the AgentBeats
-- runner writes them: {"status", "participants": {<component>: <agentbeats id>, ...},
-- "results": [<one row per shard: the green agent's data part>]}.
-- The participant's id: the id under the role the row names (participant_role, the gateway's
-- role = the scenario's component name), else the last non-empty id (Amber lists the green
-- agent first). Percentages are weighted by each shard's total_instances.
-- DuckDB 2.x needs `SET lambda_syntax='ENABLE_SINGLE_ARROW'` first for the `x -> ...` lambdas.
SELECT
  coalesce(
    nullif(json_extract_string(to_json(s.participants), '$."' || s.rows[1].participant_role || '"'), ''),
    list_filter(json_extract_string(to_json(s.participants), '$.*'), x -> x IS NOT NULL AND x <> '')[-1]
  ) AS id,
  ROUND(100 * list_sum(list_transform(s.rows, r -> r.resolved_pct * r.total_instances)) / nullif(list_sum(list_transform(s.rows, r -> r.total_instances)), 0), 2) AS "Resolved %",
  ROUND(100 * list_sum(list_transform(s.rows, r -> r.breaking_resolved_pct * r.total_instances)) / nullif(list_sum(list_transform(s.rows, r -> r.total_instances)), 0), 2) AS "Breaking Resolved %",
  ROUND(100 * list_sum(list_transform(s.rows, r -> r.partially_resolved_pct * r.total_instances)) / nullif(list_sum(list_transform(s.rows, r -> r.total_instances)), 0), 2) AS "Partially Resolved %",
  ROUND(100 * list_sum(list_transform(s.rows, r -> r.work_in_progress_pct * r.total_instances)) / nullif(list_sum(list_transform(s.rows, r -> r.total_instances)), 0), 2) AS "Work In Progress %",
  ROUND(100 * list_sum(list_transform(s.rows, r -> r.regression_pct * r.total_instances)) / nullif(list_sum(list_transform(s.rows, r -> r.total_instances)), 0), 2) AS "Regression %",
  ROUND(100 * list_sum(list_transform(s.rows, r -> r.no_op_pct * r.total_instances)) / nullif(list_sum(list_transform(s.rows, r -> r.total_instances)), 0), 2) AS "No-Op %",
  ROUND(100 * list_sum(list_transform(s.rows, r -> r.error_pct * r.total_instances)) / nullif(list_sum(list_transform(s.rows, r -> r.total_instances)), 0), 2) AS "Error %",
  ROUND(100 * list_sum(list_transform(s.rows, r -> r.fail_to_pass_passed_pct * r.total_instances)) / nullif(list_sum(list_transform(s.rows, r -> r.total_instances)), 0), 2) AS "Fail→Pass %",
  ROUND(100 * list_sum(list_transform(s.rows, r -> r.pass_to_pass_passed_pct * r.total_instances)) / nullif(list_sum(list_transform(s.rows, r -> r.total_instances)), 0), 2) AS "Pass→Pass %",
  list_sum(list_transform(s.rows, r -> r.total_instances)) AS "Total Instances",
  len(s.rows) AS "Shards"
FROM (
  SELECT results.participants AS participants,
         list_filter(results.results, r -> r.total_instances IS NOT NULL) AS rows
  FROM results
) AS s
WHERE len(s.rows) > 0
ORDER BY "Resolved %" DESC, "Error %" ASC
