#!/usr/bin/env bash
# Operations endpoints: liveness, readiness, OpenAPI, unknown routes.
source "$(dirname "$0")/lib.sh"

request GET /health
check "GET /health is ok" 200 '.status == "ok"'

request GET /ready
check "GET /ready reports engine and graphs" 200 '.status == "ready" and (.engine | type == "string") and (.graphs | index("librarian") != null)'

request GET /schema/openapi.json
check "OpenAPI lists the think endpoint" 200 '.paths["/agent/librarian/think"].post.operationId == "librarianThink"'

request GET /no/such/route '' -H 'X-Request-ID: contract-404'
check "unknown route is a structured 404 echoing X-Request-ID" 404 "$ERROR_SHAPE and .error_type == \"INVALID_INPUT\" and .request_id == \"contract-404\""

request DELETE /health
check "wrong method is a structured 405" 405 "$ERROR_SHAPE"

finish
