#!/usr/bin/env bash
# POST /agent/grace/step (and /step/stream): every action, the session protocol and its refusals, with curl + jq.
# Expects the embedded engine (LLM_PROVIDER=heuristic), whose decisions on these hits are deterministic.
source "$(dirname "$0")/lib.sh"
STEP=/agent/grace/step
Q="東京タワーの高さは何メートルですか"
STRONG='[{"document_id":"tower","page":3,"score":0.95,"snippet":"東京タワーの高さは333メートルである。東京タワーは東京都港区にある電波塔。"},
  {"document_id":"encyclopedia","score":0.93,"snippet":"東京タワーは高さ333メートルの電波塔で、1958年に完成した。"},
  {"document_id":"guidebook","score":0.92,"snippet":"東京タワー（高さ333メートル）は港区芝公園にあるタワーである。"}]'
MIDDLING='[{"document_id":"blog","score":0.6,"snippet":"東京タワーの高さは333メートルだと言われている。"},
  {"document_id":"forum","score":0.55,"snippet":"東京タワーは高さが333メートルあるらしい。"}]'
WEAK='[{"document_id":"noise-1","score":0.15,"snippet":"富士山の標高は3776メートルである。"},
  {"document_id":"noise-2","score":0.1,"snippet":"大阪城は大阪市中央区にある城である。"}]'

# answer_search PREVIOUS_BODY HITS_JSON [ERROR] -> the next request body
answer_search() {
  jq -c --argjson prev "$1" --argjson hits "$2" --arg error "${3-}" -n \
    '{request_id: "c-next", state: $prev.state, tool_result: ({step_id: $prev.step_id, hits: $hits}
      + (if $error == "" then {} else {error: $error} end))}'
}
# answer_user PREVIOUS_BODY DECISION [INPUT]
answer_user() {
  jq -c --argjson prev "$1" --arg decision "$2" --arg input "${3-}" -n \
    '{request_id: "c-next", state: $prev.state, user_response: ({decision: $decision}
      + (if $input == "" then {} else {input: $input} end))}'
}

# --- SEARCH: the first step -------------------------------------------------------------------
request POST $STEP "{\"request_id\":\"g-1\",\"query\":\"$Q\",\"state\":null}"
check "first call plans and returns SEARCH for the first rag_search step" 200 \
  '.action == "SEARCH" and .request_id == "g-1" and .turn == 1 and .step_id == .plan.steps[0].step_id and .collection == "documents"
   and (.plan.steps | map(.action)) == ["rag_search", "reasoning"] and (.state | type == "string" and startswith("v1."))'
check "every response carries events and usage" 200 \
  '(.events | map(.type)) == ["plan_created", "step_started"] and .usage.engine == "heuristic"'
FIRST=$BODY

# --- COMPLETE: strong hits go straight through ------------------------------------------------
request POST $STEP "$(answer_search "$FIRST" "$STRONG")"
check "strong hits complete with a cited answer" 200 \
  '.action == "COMPLETE" and .status == "completed" and (.answer | test("333")) and (.answer | test("\\[S1\\]"))
   and .confidence >= 0.7 and (.sources | map(.document_id) | all(. == "tower" or . == "encyclopedia" or . == "guidebook"))
   and (.history | map(.status)) == ["success", "success"] and (.events[-1].type == "completed")'
DONE=$BODY
request POST $STEP "$(answer_user "$DONE" PROCEED)"
check "a finished session takes no more steps" 400 "$ERROR_SHAPE and .error_type == \"INVALID_INPUT\" and (.message | test(\"finished\"))"

# --- ASK_USER (CONFIRM) → PROCEED → COMPLETE --------------------------------------------------
request POST $STEP "$(answer_search "$FIRST" "$MIDDLING")"
check "middling hits ask the user to confirm, with the confidence breakdown" 200 \
  '.action == "ASK_USER" and .kind == "CONFIRM" and .options == ["PROCEED", "MODIFY", "CANCEL"]
   and .confidence.decision == "CONFIRM" and (.confidence.normalized | has("max_score")) and .step.action == "rag_search"'
CONFIRM=$BODY
request POST $STEP "$(answer_user "$CONFIRM" PROCEED)"
check "PROCEED completes" 200 '.action == "COMPLETE" and (.answer | test("333"))'

# --- MODIFY → replan, CANCEL --------------------------------------------------------------------
request POST $STEP "$(answer_user "$CONFIRM" MODIFY "展望台の高さ")"
check "MODIFY with input replans from scratch (FULL) and searches again" 200 \
  '.action == "SEARCH" and .plan.revision == 1 and (.events | map(select(.type == "replanned"))[0].strategy) == "FULL"'
request POST $STEP "$(answer_user "$CONFIRM" CANCEL)"
check "CANCEL ends the session" 200 '.action == "COMPLETE" and .status == "cancelled"'

# --- ASK_USER (ESCALATE) with the user's input --------------------------------------------------
request POST $STEP "$(answer_search "$FIRST" "$WEAK")"
check "weak hits escalate" 200 '.action == "ASK_USER" and .kind == "ESCALATE" and .confidence.score < 0.4'
ESCALATE=$BODY
request POST $STEP "$(answer_user "$ESCALATE" PROCEED)"
check "ESCALATE needs input to proceed" 400 "$ERROR_SHAPE and .details[0].path == \"\$.user_response.input\""
request POST $STEP "$(answer_user "$ESCALATE" PROCEED "東京タワーの高さは333メートルです。")"
check "the user's input is used and cited" 200 '.action == "COMPLETE" and (.answer | test("\\[U1\\]"))'

# --- step failure → FALLBACK (ask the user: there is one collection) ----------------------------
request POST $STEP "$(answer_search "$FIRST" '[]' "vector store unavailable")"
check "a failed search falls back to asking the user" 200 \
  '.action == "ASK_USER" and .kind == "QUESTION" and .step.action == "ask_user"
   and (.events | map(select(.type == "replanned"))[0].strategy) == "FALLBACK"'

# --- ERROR LOOP_LIMIT: failures past the replan limit with nothing gathered ----------------------
PLAN='[{"step_id":1,"action":"rag_search","query":"東京タワー","collection":"documents"},{"step_id":2,"action":"reasoning","depends_on":[1]}]'
request POST $STEP "{\"request_id\":\"g-2\",\"query\":\"$Q\",\"plan_steps\":$PLAN}"
for _ in 1 2 3; do
  request POST $STEP "$(answer_search "$BODY" '[]' "down")"
done
check "failures past the replan limit are LOOP_LIMIT (HTTP 200)" 200 "$ERROR_SHAPE and .error_type == \"LOOP_LIMIT\""

# --- INVALID_INPUT, the state left usable ---------------------------------------------------------
request POST $STEP "$(jq -c --argjson prev "$FIRST" -n '{request_id: "g-3", state: $prev.state}')"
check "missing tool_result while a SEARCH is pending" 400 "$ERROR_SHAPE and .details[0].path == \"\$.tool_result\""
request POST $STEP "$(answer_user "$FIRST" PROCEED)"
check "user_response when nothing was asked" 400 "$ERROR_SHAPE and .details[0].path == \"\$.user_response\""
request POST $STEP "$(jq -c --argjson prev "$FIRST" -n '{request_id: "g-4", state: $prev.state, tool_result: {step_id: 99, hits: []}}')"
check "a tool_result for another step (replayed state)" 400 "$ERROR_SHAPE and .details[0].path == \"\$.tool_result.step_id\""
request POST $STEP "$(answer_search "$FIRST" "$STRONG" | jq -c '.tool_result.turn = 5')"
check "an answer bound to another turn (replayed state)" 400 "$ERROR_SHAPE and .details[0].path == \"\$.tool_result.turn\""
request POST $STEP "$(answer_search "$FIRST" '[{"document_id":"d","snippet":"x","score":7.5}]')"
check "an out-of-range score" 400 "$ERROR_SHAPE and .details[0].path == \"\$.tool_result.hits[0].score\""
request POST $STEP "$(answer_search "$FIRST" "$STRONG" | jq -c '.state |= (.[0:5] + (if .[5:6] == "A" then "B" else "A" end) + .[6:])')"
check "an edited state token" 400 "$ERROR_SHAPE and (.message | test(\"signature\")) and .details[0].path == \"\$.state\""
request POST $STEP "$(answer_search "$FIRST" "$STRONG" | jq -c '.state |= ("v9" + .[2:])')"
check "a token of an unknown version" 422 "$ERROR_SHAPE and .details[0].path == \"\$.state\""
request POST $STEP "{\"request_id\":\"g-5\",\"query\":\"$Q\",\"plan_steps\":[{\"step_id\":1,\"action\":\"web_search\",\"query\":\"x\"}]}"
check "an unknown action in a plan is 422 with its path" 422 "$ERROR_SHAPE and .details[0].path == \"\$.plan_steps[0].action\""
HUGE=$(jq -c -n '[range(1; 40) | {step_id: ., action: "reasoning"}]')
request POST $STEP "{\"request_id\":\"g-6\",\"query\":\"$Q\",\"plan_steps\":$HUGE}"
check "a huge plan is 422" 422 "$ERROR_SHAPE and .error_type == \"INVALID_INPUT\""
CYCLE='[{"step_id":1,"action":"reasoning","depends_on":[2]},{"step_id":2,"action":"reasoning","depends_on":[1]}]'
request POST $STEP "{\"request_id\":\"g-7\",\"query\":\"$Q\",\"plan_steps\":$CYCLE}"
check "a cyclic plan is 400" 400 "$ERROR_SHAPE and (.message | test(\"cycle\"))"
request POST $STEP '{"request_id": "g-8", "query": '
check "malformed JSON is 400" 400 "$ERROR_SHAPE and .error_type == \"INVALID_INPUT\""
request POST $STEP "$(answer_search "$FIRST" "$STRONG")"
check "after all that, the original state still works" 200 '.action == "COMPLETE"'

# --- Server-Sent Events --------------------------------------------------------------------------
STATUS=$(curl -sS -N -o "$BODY_FILE" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
  --data-binary "{\"request_id\":\"g-9\",\"query\":\"$Q\"}" "$BASE_URL$STEP/stream")
BODY=$(grep '^data: ' "$BODY_FILE" | tail -1 | sed 's/^data: //')
check "the stream ends with the action body" 200 '.action == "SEARCH" and (.events | length) == 2'
EVENTS=$(grep -c '^event: progress' "$BODY_FILE" || true)
BODY="{\"progress\": $EVENTS, \"action\": $(grep -c '^event: action' "$BODY_FILE" || true)}"
check "one progress event per record, then one action event" 200 '.progress == 2 and .action == 1'

finish
