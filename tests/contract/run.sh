#!/usr/bin/env bash
# Run every contract script that needs nothing but a running service: BASE_URL=http://host:port bash run.sh
set -uo pipefail
cd "$(dirname "$0")"
status=0
for script in health.sh librarian.sh ace.sh grace.sh proposal_quality.sh; do
  bash "$script" || status=1
done
exit $status
