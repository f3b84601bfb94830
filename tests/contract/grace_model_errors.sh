#!/usr/bin/env bash
# GRACE against a deployment whose model misbehaves: MODE=slow (replies later than 1 s) or MODE=failing
# (every call 5xx). The first call already asks the model for a plan: over the step's budget that is
# TIMEOUT; a failing provider gets the seed's template plan (search, then answer) instead (seed 002 §4.1).
source "$(dirname "$0")/lib.sh"
: "${MODE:?set MODE=slow or MODE=failing}"
STEP=/agent/grace/step

if [ "$MODE" = slow ]; then
  request POST $STEP '{"request_id":"gm-1","query":"東京タワーとスカイツリーの高さの違いは？","constraints":{"timeout_ms":300}}'
  check "a step over its budget is TIMEOUT (HTTP 200)" 200 '.action == "ERROR" and .error_type == "TIMEOUT" and .request_id == "gm-1"'
  check "the TIMEOUT body carries what was spent" 200 '.usage.llm_calls >= 1'
else
  request POST $STEP '{"request_id":"gm-1","query":"東京タワーとスカイツリーの高さの違いは？"}'
  check "a failing provider while planning gets the template plan" 200 \
    '.action == "SEARCH" and .request_id == "gm-1" and ([.plan.steps[].action] == ["rag_search", "reasoning"])'
  check "the fallback is an event and in the usage, with the failed calls counted" 200 \
    '.events[0].type == "plan_fallback" and .usage.engine == "heuristic" and .usage.fallback and .usage.llm_calls >= 1'
fi

finish
