#!/usr/bin/env bash
# TIMEOUT and MODEL_FAILURE need a deployment whose model misbehaves. Run against a server whose LLM
# provider is slow (MODE=slow: every reply later than 1 s) or failing (MODE=failing: every call 5xx).
source "$(dirname "$0")/lib.sh"
: "${MODE:?set MODE=slow or MODE=failing}"
THINK=/agent/librarian/think

# The slow model needs a short budget to run out; a failing one must not race a budget at all (a loaded
# machine could otherwise turn its MODEL_FAILURE into TIMEOUT).
BUDGET=$([ "$MODE" = slow ] && echo 300 || echo 10000)
request POST $THINK '{"request_id":"m-1","user_query":"東京タワーの高さ","subject_id":"s","constraints":{"timeout_ms":'"$BUDGET"'}}'
if [ "$MODE" = slow ]; then
  check "a step over its budget is TIMEOUT (HTTP 200)" 200 '.action == "ERROR" and .error_type == "TIMEOUT" and .request_id == "m-1"'
else
  check "a failing provider is MODEL_FAILURE (HTTP 200)" 200 '.action == "ERROR" and .error_type == "MODEL_FAILURE" and .request_id == "m-1"'
fi
check "the ERROR body carries what the step spent on the model" 200 '.usage.llm_calls >= 1 and .usage.model != null'

finish
