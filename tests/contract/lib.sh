#!/usr/bin/env bash
# Helpers for the curl + jq contract scripts. Source it; needs BASE_URL.
set -euo pipefail
: "${BASE_URL:?set BASE_URL, e.g. http://127.0.0.1:8080}"
BODY_FILE=$(mktemp)
trap 'rm -f "$BODY_FILE"' EXIT
FAILURES=0
CHECKS=0

# request METHOD PATH [DATA] [extra curl args...] -> sets STATUS, BODY
request() {
  local method=$1 path=$2 data=${3-}
  shift $(( $# < 3 ? $# : 3 ))
  if [ -n "$data" ]; then
    STATUS=$(curl -sS -o "$BODY_FILE" -w '%{http_code}' -X "$method" -H 'Content-Type: application/json' \
      --data-binary "$data" "$@" "$BASE_URL$path")
  else
    STATUS=$(curl -sS -o "$BODY_FILE" -w '%{http_code}' -X "$method" "$@" "$BASE_URL$path")
  fi
  BODY=$(cat "$BODY_FILE")
}

# request_file METHOD PATH FILE -> like `request`, with the body read from FILE (for bodies too big for argv)
request_file() {
  STATUS=$(curl -sS -o "$BODY_FILE" -w '%{http_code}' -X "$1" -H 'Content-Type: application/json' \
    --data-binary "@$3" "$BASE_URL$2")
  BODY=$(cat "$BODY_FILE")
}

# check DESCRIPTION EXPECTED_STATUS JQ_FILTER  (the filter must print `true`)
check() {
  local description=$1 expected=$2 filter=$3
  CHECKS=$((CHECKS + 1))
  local verdict
  verdict=$(printf '%s' "$BODY" | jq -r "$filter" 2>/dev/null || echo "jq-error")
  if [ "$STATUS" = "$expected" ] && [ "$verdict" = "true" ]; then
    printf 'ok   %s\n' "$description"
  else
    FAILURES=$((FAILURES + 1))
    printf 'FAIL %s (status %s, expected %s; filter %s -> %s)\n  body: %.400s\n' \
      "$description" "$STATUS" "$expected" "$filter" "$verdict" "$BODY"
  fi
}

# The ERROR body every endpoint uses.
ERROR_SHAPE='.action == "ERROR" and (.request_id | type == "string") and (.message | type == "string") and (.details | type == "array")'

finish() {
  printf '%s: %d checks, %d failed\n' "$(basename "$0")" "$CHECKS" "$FAILURES"
  [ "$FAILURES" -eq 0 ]
}
