#!/usr/bin/env bash
# GRACE's TIMEOUT and MODEL_FAILURE need a deployment whose model misbehaves: MODE=slow (replies later than
# 1 s) or MODE=failing (every call 5xx). The first call already asks the model for a plan.
source "$(dirname "$0")/lib.sh"
: "${MODE:?set MODE=slow or MODE=failing}"
STEP=/agent/grace/step

request POST $STEP '{"request_id":"gm-1","query":"東京タワーとスカイツリーの高さの違いは？","constraints":{"timeout_ms":300}}'
if [ "$MODE" = slow ]; then
  check "a step over its budget is TIMEOUT (HTTP 200)" 200 '.action == "ERROR" and .error_type == "TIMEOUT" and .request_id == "gm-1"'
else
  check "a failing provider is MODEL_FAILURE (HTTP 200)" 200 '.action == "ERROR" and .error_type == "MODEL_FAILURE" and .request_id == "gm-1"'
fi

finish
