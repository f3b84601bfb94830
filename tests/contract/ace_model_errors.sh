#!/usr/bin/env bash
# ACE against a failing (MODE=failing) or slow (MODE=slow) model: ERROR bodies with HTTP 200; the
# reflector instead returns an empty reflection and says why (seed 001), and a curator whose model fails
# while the request still has time curates by its rules and says so in `notes`.
source "$(dirname "$0")/lib.sh"
: "${MODE:?set MODE=failing or MODE=slow}"
EXPECTED=$([ "$MODE" = slow ] && echo TIMEOUT || echo MODEL_FAILURE)
PLAYBOOK='{"bullets":[{"id":"gen-00001","section":"general","content":"東京タワーの高さは333メートルである。"}]}'
# A slow model needs a short budget to run out; a failing one must not race it on a loaded machine.
LIMIT='"constraints":{"timeout_ms":'$([ "$MODE" = slow ] && echo 1000 || echo 10000)'}'

request POST /agent/ace/generate "{\"request_id\":\"m-1\",\"query\":\"東京タワーの高さ\",\"playbook\":$PLAYBOOK,$LIMIT}"
check "generate: $EXPECTED is an ERROR body with HTTP 200" 200 "$ERROR_SHAPE and .error_type == \"$EXPECTED\" and .request_id == \"m-1\""
check "generate: the ERROR body carries what was spent" 200 '.usage.llm_calls >= 1'

request POST /agent/ace/reflect "{\"request_id\":\"m-2\",\"trajectory\":{\"query\":\"q\",\"generated_answer\":\"300\",\"used_bullet_ids\":[\"gen-00001\"]},\"ground_truth\":\"333\",\"playbook\":$PLAYBOOK,$LIMIT}"
check "reflect: an empty reflection that names the $EXPECTED" 200 \
  ".action == \"REFLECTION\" and .reflection.insights == [] and .reflection.bullet_evaluations == [] and .model_problem.error_type == \"$EXPECTED\""
check "reflect: usage names the fallback and counts the failed calls" 200 \
  '.usage.engine == "heuristic" and .usage.fallback and .usage.llm_calls >= 1'

request POST /agent/ace/curate "{\"request_id\":\"m-3\",\"reflection\":{\"insights\":[{\"reasoning\":\"r\",\"error_identification\":\"e\",\"root_cause_analysis\":\"c\",\"correct_approach\":\"a\",\"key_insight\":\"k\"}],\"bullet_evaluations\":[],\"trajectory_query\":\"q\",\"trajectory_dataset\":\"default\"},\"playbook\":$PLAYBOOK,$LIMIT}"
if [ "$MODE" = slow ]; then
  check "curate: a model slower than the whole budget is a TIMEOUT ERROR body with HTTP 200" 200 \
    "$ERROR_SHAPE and .error_type == \"TIMEOUT\""
else
  check "curate: a failed model keeps the deterministic part and curates by the rules, saying so" 200 \
    '.action == "CURATED" and .produced_by == "heuristic" and ([.deltas[] | select(.type == "ADD") | .content] == ["k"]) and any(.notes[]; contains("curator'"'"'s model failed (MODEL_FAILURE")) and .usage.fallback'
fi

finish
