#!/usr/bin/env bash
# POST /agent/librarian/think: SEARCH, COMPLETE, and the errors any deployment can be made to produce.
source "$(dirname "$0")/lib.sh"
THINK=/agent/librarian/think

# --- SEARCH: the first step ---------------------------------------------------------------
request POST $THINK '{"request_id":"c-1","user_query":"東京タワーの高さは何メートルですか","subject_id":"subj-1","state":null}'
check "first call returns SEARCH with queries, rationale and state" 200 \
  '.action == "SEARCH" and .request_id == "c-1" and (.queries_text | length) >= 1 and (.rationale | length) > 0 and (.state | type == "string" and startswith("v1."))'
check "SEARCH never tries to override subject_id" 200 '(.filters_hint | has("subject_id")) | not'
FIRST=$BODY

# --- COMPLETE: the caller ran the search and calls back -----------------------------------
SECOND=$(jq -c --argjson first "$FIRST" -n '{
  request_id: "c-2", user_query: "東京タワーの高さは何メートルですか", subject_id: "subj-1",
  state: $first.state,
  search_history: [{queries_text: $first.queries_text, queries_vector: $first.queries_vector, results: [
    {document_id: "tower", page: 3, chunk_id: "tower#3", score: 9.5,
     snippet: "東京タワーの高さは333メートルである。東京タワーは東京都港区にある電波塔。"},
    {document_id: "fuji", page: 1, score: 2.0, snippet: "富士山の標高は3776メートル。"}]}]}')
request POST $THINK "$SECOND"
check "second call completes with grounded evidence" 200 \
  '.action == "COMPLETE" and .evidence[0].document_id == "tower" and .evidence[0].pages == [3] and (.evidence[0].why_relevant | length) > 0 and (.coverage_notes | length) > 0'

# --- INVALID_INPUT ------------------------------------------------------------------------
request POST $THINK '{"request_id":"c-3","user_query":"","subject_id":"s"}'
check "empty user_query is 422 with the field path" 422 "$ERROR_SHAPE and .error_type == \"INVALID_INPUT\" and .details[0].path == \"\$.user_query\""

request POST $THINK '{"request_id":"c-4","subject_id":"s"}'
check "missing user_query is 422" 422 "$ERROR_SHAPE and .error_type == \"INVALID_INPUT\""

request POST $THINK '{"request_id": "c-5", "user_query": '
check "malformed JSON is 400" 400 "$ERROR_SHAPE and .error_type == \"INVALID_INPUT\""

request POST $THINK "$(printf '{"request_id":"c-6","user_query":"\xff\xfe","subject_id":"s"}')"
check "invalid UTF-8 is 400" 400 "$ERROR_SHAPE"

# The state is an opaque token: change one character of its payload and it is refused.
TAMPERED=$(printf '%s' "$SECOND" | jq -c '.state |= (.[0:5] + (if .[5:6] == "A" then "B" else "A" end) + .[6:])')
request POST $THINK "$TAMPERED"
check "tampered state token is 400" 400 "$ERROR_SHAPE and .error_type == \"INVALID_INPUT\" and .details[0].path == \"\$.state\""

VERSION=$(printf '%s' "$SECOND" | jq -c '.state |= ("v9" + .[2:])')
request POST $THINK "$VERSION"
check "a token of an unknown version is 422 at \$.state" 422 "$ERROR_SHAPE and .details[0].path == \"\$.state\""

BIG_FILE=$(mktemp)
{ printf '{"request_id":"c-7","subject_id":"s","user_query":"'; head -c 9000000 /dev/zero | tr '\0' 'a'; printf '"}'; } > "$BIG_FILE"
request_file POST $THINK "$BIG_FILE"
rm -f "$BIG_FILE"
check "body over the limit is 413" 413 "$ERROR_SHAPE and .error_type == \"INVALID_INPUT\""

# --- LOOP_LIMIT: the caller already ran max_loops rounds and found nothing ------------------
request POST $THINK '{"request_id":"c-8","user_query":"光合成の仕組み","subject_id":"s","constraints":{"max_loops":2},
  "search_history":[{"queries_text":["光合成"],"results":[]},{"queries_text":["光合成 仕組み"],"results":[]}]}'
check "nothing usable after max_loops rounds is LOOP_LIMIT (HTTP 200)" 200 '.action == "ERROR" and .error_type == "LOOP_LIMIT"'

# --- OTHER: no usable evidence and no query left to try ------------------------------------
request POST $THINK '{"request_id":"c-9","user_query":"zyx","subject_id":"s"}'
ZYX=$BODY
NEXT=$(jq -c --argjson first "$ZYX" -n '{request_id: "c-10", user_query: "zyx", subject_id: "s", state: $first.state,
  search_history: [{queries_text: $first.queries_text, queries_vector: $first.queries_vector, results: []}]}')
request POST $THINK "$NEXT"
check "search exhausted before max_loops is ERROR OTHER (HTTP 200)" 200 '.action == "ERROR" and .error_type == "OTHER"'

finish
