#!/usr/bin/env bash
# POST /api/proposal-quality/validate, /api/organizer/run, /api/advisor/run (seed 004 §6–7).
# Runs against any deployment; with a model configured the run endpoints' wording differs, but the shapes hold.
source "$(dirname "$0")/lib.sh"
VALIDATE=/api/proposal-quality/validate
ORGANIZER=/api/organizer/run
ADVISOR=/api/advisor/run

DASHBOARD='{"trays":{"todo":[{"id":"n1","title":"リリース準備、告知文の作成・当日の連絡体制","status":"todo"},
  {"id":"n2","title":"告知文のレビュー","status":"todo"}],"doing":[{"id":"n3","title":"会場の予約","status":"doing"}]}}'

# --- Organizer ----------------------------------------------------------------------------
request POST $ORGANIZER "{\"request_id\":\"pq-1\",\"dashboard\":$DASHBOARD,\"focusNodeId\":\"n1\"}"
check "organizer run is ok, rendered, with request id and usage" 200 \
  '.ok == true and .request_id == "pq-1" and .errors == [] and .attempts >= 1 and (.rendered.markdown | length) > 0 and (.usage.engine | type == "string")'
check "organizer report has the four keys and decomposes the focus node into >= 2 children" 200 \
  '(.report | has("decomposition_proposals") and has("grouping_proposals") and has("relation_proposals") and has("summary")) and ([.report.decomposition_proposals[] | select(.target_node_id == "n1") | (.suggested_children | length) >= 2] | any)'
check "organizer uses only dashboard ids" 200 \
  '[.report.decomposition_proposals[].target_node_id, .report.grouping_proposals[].node_ids[], .report.relation_proposals[].from_node_id, .report.relation_proposals[].to_node_id] | all(. == "n1" or . == "n2" or . == "n3")'

# --- Advisor ------------------------------------------------------------------------------
request POST $ADVISOR "{\"request_id\":\"pq-2\",\"dashboard\":$DASHBOARD,\"focusNodeId\":\"n3\",\"userIntent\":\"進め方に迷っている\"}"
check "advisor run is ok with >= 2 options, each with the four items" 200 \
  '.ok == true and .report.target_node_id == "n3" and (.report.options | length) >= 2 and (.report.options | all(.next_action and .necessary_info and .criteria_note and (.risks | length) >= 1))'
check "advisor output has no forbidden word" 200 \
  '[.report | .. | strings | test("ベスト|推奨|正解|すべき")] | any | not'

request POST $ADVISOR '{"request_id":"pq-3","dashboard":{"trays":{}}}'
check "advisor with no nodes (A4) names no node" 200 '.ok == true and .report.target_node_id == ""'

# --- validate -----------------------------------------------------------------------------
GOOD='{"decomposition_proposals":[],"grouping_proposals":[{"group_label":"告知まわり","reason":"告知に関わる作業です。","node_ids":["n1","n2"]}],"relation_proposals":[],"summary":"まず告知まわりをまとめると見通しが立ちます。"}'
request POST $VALIDATE "{\"request_id\":\"pq-4\",\"kind\":\"organizer\",\"report\":$GOOD,\"validNodeIds\":[\"n1\",\"n2\",\"n3\"]}"
check "a valid organizer report passes" 200 '.ok == true and .errors == [] and .warnings == [] and .request_id == "pq-4"'

request POST $VALIDATE "{\"kind\":\"organizer\",\"report\":$GOOD,\"dashboard\":$DASHBOARD}"
check "valid ids can come from a dashboard" 200 '.ok == true'

BAD='{"decomposition_proposals":[{"target_node_id":"n1","target_title":"t","reason":"分けるべきです","suggested_children":[{"title":"a","context":"b"}]}],"grouping_proposals":[],"relation_proposals":[{"from_node_id":"n1","to_node_id":"xyz","relation_type":"関連","reason":"r"}],"summary":""}'
request POST $VALIDATE "{\"kind\":\"organizer\",\"report\":$BAD,\"validNodeIds\":[\"n1\"]}"
check "Must violations are errors with exact paths" 200 \
  '.ok == false and (.errors | index("decomposition_proposals[0].suggested_children must have at least 2 items")) != null and (.errors | index("relation_proposals[0].to_node_id '"'"'xyz'"'"' is not in valid node list")) != null and (.errors | index("summary must be non-empty")) != null and (.errors | any(startswith("decomposition_proposals[0].reason contains forbidden phrase")))'

request POST $VALIDATE '{"kind":"advisor","report":{"target_node_id":"n1","target_title":"t","current_status":"todo","options":[{"label":"ひとつ","next_action":"a","necessary_info":"b","criteria_note":"c","risks":["d"]}],"next_decision":"e","summary":"推奨はこれです"},"validNodeIds":["n1"]}'
check "advisor: too few options and a forbidden word are errors; Should rules are warnings" 200 \
  '.ok == false and .errors == ["options must have at least 2 items", "summary contains forbidden word '"'"'推奨'"'"' (e.g. ベスト, 推奨)"] and .warnings == ["options[0].label should contain 案/パターン/候補", "criteria should have at least 2 items"]'

# --- INVALID_INPUT ------------------------------------------------------------------------
request POST $VALIDATE '{"kind":"organizer","report":[1,2],"validNodeIds":[]}'
check "a report that is not an object is 422 at \$.report" 422 "$ERROR_SHAPE and .error_type == \"INVALID_INPUT\" and .details[0].path == \"\$.report\""

request POST $VALIDATE '{"kind":"organizer","report":{},"validNodeIds":[1]}'
check "an id of the wrong type is 422 at its path" 422 "$ERROR_SHAPE and .details[0].path == \"\$.validNodeIds[0]\""

request POST $ORGANIZER '{"dashboard":{"nodes":[]}}'
check "a dashboard without trays is 422 at \$.dashboard.trays" 422 "$ERROR_SHAPE and .error_type == \"INVALID_INPUT\" and ([.details[].path] | index(\"\$.dashboard.trays\"))"

request POST $ADVISOR "{\"dashboard\":$DASHBOARD,\"focusNodeId\":\"n99\"}"
check "a focus node that is not on the dashboard is 422" 422 "$ERROR_SHAPE and .details[0].path == \"\$.focusNodeId\""

request POST $ADVISOR '{"dashboard":{"trays":{}},"constraints":{"max_corrections":5}}'
check "more re-asks than the seed allows is 422" 422 "$ERROR_SHAPE and .details[0].path == \"\$.constraints.max_corrections\""

BIG_FILE=$(mktemp)
{ printf '{"kind":"organizer","validNodeIds":[],"report":{"summary":"'; head -c 400000 /dev/zero | tr '\0' 'a'; printf '"}}'; } > "$BIG_FILE"
request_file POST $VALIDATE "$BIG_FILE"
rm -f "$BIG_FILE"
check "an enormous report is 413 at \$.report" 413 "$ERROR_SHAPE and .error_type == \"INVALID_INPUT\" and .details[0].path == \"\$.report\""

request POST $VALIDATE '{"kind": "organizer", "report": '
check "malformed JSON is 400" 400 "$ERROR_SHAPE and .error_type == \"INVALID_INPUT\""

finish
