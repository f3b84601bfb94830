#!/usr/bin/env bash
# ACE: POST /agent/ace/{search,generate,reflect,curate} and /workflow/run, with the embedded engine or any model.
source "$(dirname "$0")/lib.sh"

PLAYBOOK='{"bullets":[
  {"id":"gen-00001","section":"general","content":"東京タワーの高さは333メートルである。"},
  {"id":"gen-00002","section":"general","content":"富士山の標高は3776メートルである。"},
  {"id":"gen-00003","section":"general","content":"Always paginate: loop over page_index until an API returns an empty page."},
  {"id":"gen-00004","section":"general","content":"Check the Venmo balance before approving a payment request.","helpful":3,"harmful":1}]}'

# --- search ---------------------------------------------------------------------------------------
request POST /agent/ace/search "{\"request_id\":\"a-1\",\"query\":{\"query_text\":\"東京タワーの高さ\",\"top_k\":2},\"playbook\":$PLAYBOOK}"
check "a Japanese query finds the Japanese bullet first" 200 \
  '.action == "RESULTS" and .request_id == "a-1" and .results[0].bullet.id == "gen-00001" and (.results | length) == 2'
check "results are sorted and carry all three scores" 200 \
  '([.results[].combined_score] | . == (sort | reverse)) and all(.results[]; (.vector_score | type) == "number" and (.bm25_score | type) == "number")'
check "confidence_score is computed" 200 '.results[0].bullet.confidence_score == 0.5'

request POST /agent/ace/search "{\"query\":{\"query_text\":\"venmo balance\",\"min_confidence\":0.7},\"playbook\":$PLAYBOOK}"
check "min_confidence filters on the computed score (3/4 = 0.75)" 200 '[.results[].bullet.id] == ["gen-00004"] and .results[0].bullet.confidence_score == 0.75'

# --- generate → reflect → curate ------------------------------------------------------------------
request POST /agent/ace/generate "{\"request_id\":\"a-2\",\"query\":\"How do I paginate an API?\",\"playbook\":$PLAYBOOK}"
check "generate answers with a grounded trajectory" 200 \
  '.action == "ANSWER" and (.answer | length) > 0 and .trajectory.query == "How do I paginate an API?" and (.trajectory.used_bullet_ids - [.search_results[].bullet.id] | length) == 0 and (.usage.engine | type) == "string"'
TRAJECTORY=$(printf '%s' "$BODY" | jq -c '.trajectory')

request POST /agent/ace/reflect "{\"request_id\":\"a-3\",\"trajectory\":$TRAJECTORY,\"playbook\":$PLAYBOOK,\"ground_truth\":\"Loop over page_index until the page comes back empty\",\"test_report\":\"FAILED test_all_pages: got 20 of 52 items\"}"
check "reflect evaluates only bullets that were used" 200 \
  "$(printf '.action == "REFLECTION" and ([.reflection.bullet_evaluations[].bullet_id] - %s | length) == 0 and .reflection.trajectory_query == "How do I paginate an API?"' "$(printf '%s' "$TRAJECTORY" | jq -c '.used_bullet_ids')")"
REFLECTION=$(printf '%s' "$BODY" | jq -c '.reflection')

request POST /agent/ace/reflect "{\"trajectory\":{\"query\":\"q\",\"used_bullet_ids\":[\"gen-00001\",\"nope-1\"]},\"playbook\":$PLAYBOOK}"
check "reflect skips used ids the playbook does not have" 200 '.skipped_bullet_ids == ["nope-1"] and [.reflection.bullet_evaluations[].bullet_id] == ["gen-00001"]'

request POST /agent/ace/curate "{\"request_id\":\"a-4\",\"reflection\":$REFLECTION,\"playbook\":$PLAYBOOK,\"trajectory\":$TRAJECTORY}"
check "curate returns applied deltas and the new playbook with unique ids" 200 \
  '.action == "CURATED" and ([.playbook.bullets[].id] | length) == ([.playbook.bullets[].id] | unique | length) and all(.deltas[]; .bullet_id != null)'
check "a new bullet continues the id sequence" 200 \
  '[.deltas[] | select(.type == "ADD") | .bullet_id] | length >= 1 and all(test("^general-0000[5-9]$"))'

request POST /agent/ace/curate "{\"reflection\":{\"insights\":[],\"bullet_evaluations\":[],\"trajectory_query\":\"q\",\"trajectory_dataset\":\"default\"},\"playbook\":$PLAYBOOK,\"deltas\":[{\"type\":\"DELETE\",\"section\":\"general\",\"bullet_id\":\"gen-00004\"},{\"type\":\"ADD\",\"section\":\"general\",\"content\":\"New lesson.\"}]}"
check "the caller's deltas are applied; a deleted id is not reused" 200 \
  '[.deltas[] | [.type, .bullet_id]] == [["DELETE", "gen-00004"], ["ADD", "general-00005"]]'

# --- /workflow/run ------------------------------------------------------------------------------------
request POST /workflow/run '{"request_id":"a-5","query":"paginate","dataset":"contract-never-stored"}'
check "workflow over a dataset with no stored playbook answers with 0 results" 200 \
  '.action == "COMPLETE" and .request_id == "a-5" and .search_results_count == 0 and (.llm_response | length) > 0'

# --- INVALID_INPUT ----------------------------------------------------------------------------------
request POST /agent/ace/search '{"request_id":"a-6","query":{"query_text":"x"},"playbook":{"bullets":[{"id":"a-1","section":"s","content":"c"},{"id":"a-1","section":"s","content":"d"}]}}'
check "duplicate bullet ids are 400 with the path" 400 "$ERROR_SHAPE and .error_type == \"INVALID_INPUT\" and .request_id == \"a-6\" and .details[0].path == \"\$.playbook.bullets[1].id\""

request POST /agent/ace/search '{"query":{"query_text":"x"},"playbook":{"bullets":[{"id":"a-1","section":"s","content":"c","harmful":-1}]}}'
check "negative counters are 422 with the path" 422 "$ERROR_SHAPE and .details[0].path == \"\$.playbook.bullets[0].harmful\""

request POST /agent/ace/generate '{"query":"x","dataset":"appworld","playbook":{"bullets":[{"id":"a-1","section":"made_up","content":"c"}]}}'
check "an unknown section for the dataset is 400" 400 "$ERROR_SHAPE and .details[0].path == \"\$.playbook.bullets[0].section\""

request POST /agent/ace/curate "{\"reflection\":{\"insights\":[],\"bullet_evaluations\":[],\"trajectory_query\":\"q\",\"trajectory_dataset\":\"default\"},\"playbook\":$PLAYBOOK,\"deltas\":[{\"type\":\"UPDATE\",\"section\":\"general\",\"bullet_id\":\"gen-09999\",\"content\":\"x\"}]}"
check "a delta naming a missing bullet is 400" 400 "$ERROR_SHAPE and .details[0].path == \"\$.deltas[0].bullet_id\""

request POST /agent/ace/curate "{\"reflection\":{\"insights\":[],\"bullet_evaluations\":[{\"bullet_id\":\"gen-00002\",\"tag\":\"helpful\"}],\"trajectory_query\":\"q\",\"trajectory_dataset\":\"default\"},\"trajectory\":{\"query\":\"q\",\"used_bullet_ids\":[\"gen-00001\"]},\"playbook\":$PLAYBOOK}"
check "an evaluation of an unused bullet is 400" 400 "$ERROR_SHAPE and .details[0].path == \"\$.reflection.bullet_evaluations[0].bullet_id\""

request POST /workflow/run '{"query":"x","dataset":"../../etc/passwd"}'
check "a dataset name that could leave the data directory is 422" 422 "$ERROR_SHAPE and .details[0].path == \"\$.dataset\""

request POST /agent/ace/reflect '{"trajectory": '
check "malformed JSON is 400" 400 "$ERROR_SHAPE and .error_type == \"INVALID_INPUT\""

# --- stored playbooks (read-only checks: nothing here writes to the deployment's store) ------------------
request GET /playbooks
check "the stored playbooks are listed" 200 '.action == "PLAYBOOKS" and (.datasets | type == "array")'

request GET /playbooks/contract-never-stored
check "exporting a dataset with no stored playbook is 404" 404 "$ERROR_SHAPE and .details[0].path == \"\$.dataset\""

request PUT /playbooks/contract-never-stored '{"bullets": []}'
check "an import must be text/plain (415)" 415 "$ERROR_SHAPE and .error_type == \"INVALID_INPUT\""

request PUT /playbooks/contract-never-stored '' -H 'Content-Type: text/plain' --data-binary $'## STRATEGIES\r\nnot a bullet\r\n'
check "a text that is not a playbook is 400 naming the line" 400 "$ERROR_SHAPE and (.message | contains(\"line 2\"))"

request GET /playbooks/contract-never-stored
check "a refused import stored nothing" 404 "$ERROR_SHAPE"

finish
