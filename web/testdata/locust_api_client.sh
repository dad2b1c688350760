#!/bin/sh
# A Locust web API client written against Locust's documentation: the curl
# calls a CI job or a shell script typically makes to drive a Locust master.
# It must work unchanged against cicada's web server.
#
#   usage: locust_api_client.sh http://127.0.0.1:8089
#   CURL_OPTS adds curl options (e.g. "-u user:pass -k").
set -eu
URL=${1:?usage: locust_api_client.sh BASE_URL}
CURL="curl -sS --fail --max-time 30 ${CURL_OPTS:-}"

fail() { echo "locust_api_client: $*" >&2; exit 1; }
expect() { # expect WHAT OUTPUT PATTERN
	printf '%s' "$2" | grep -q -- "$3" || fail "$1: expected '$3' in: $2"
}

# Start a test (form-encoded, exactly as Locust's docs show).
out=$($CURL -XPOST -d user_count=10 -d spawn_rate=5 -d host=http://127.0.0.1:26080 -d run_time=5m "$URL/swarm")
expect "start" "$out" '"success": true'
expect "start" "$out" '"message": "Swarming started"'
expect "start" "$out" '"run_time": 300'
expect "start" "$out" '"host": "http://127.0.0.1:26080"'

# Poll the stats until the test is running with requests.
i=0
while :; do
	out=$($CURL "$URL/stats/requests")
	if printf '%s' "$out" | grep -q '"state": "running"' &&
		! printf '%s' "$out" | grep -q '"num_requests": 0,'; then
		break
	fi
	i=$((i + 1))
	[ $i -lt 200 ] || fail "test did not reach running with requests: $out"
	sleep 0.1
done
expect "stats" "$out" '"name": "Aggregated"'
expect "stats" "$out" '"user_count": '
expect "stats" "$out" '"total_rps": '
expect "stats" "$out" '"fail_ratio": '
expect "stats" "$out" '"current_response_time_percentile_95": '

# Edit the running test.
out=$($CURL -XPOST -d user_count=20 -d spawn_rate=10 "$URL/swarm")
expect "edit" "$out" '"success": true'

# An invalid run time is refused with Locust's message.
out=$($CURL -XPOST -d user_count=20 -d spawn_rate=10 -d run_time=soon "$URL/swarm")
expect "bad run_time" "$out" '"success": false'
expect "bad run_time" "$out" 'Valid run_time formats are : 20, 20s, 3m, 2h, 1h20m, 3h30m10s, etc.'

# Downloads.
out=$($CURL "$URL/stats/requests/csv")
expect "requests csv" "$out" '^Type,Name,Request Count,Failure Count,Median Response Time'
expect "requests csv" "$out" ',Aggregated,'
hdr=$($CURL -o /dev/null -D - "$URL/stats/requests/csv")
expect "requests csv headers" "$hdr" 'filename=requests_'
out=$($CURL "$URL/stats/failures/csv")
expect "failures csv" "$out" '^Method,Name,Error,Occurrences'
out=$($CURL "$URL/exceptions/csv")
expect "exceptions csv" "$out" '^Count,Message,Traceback,Nodes'
out=$($CURL "$URL/exceptions")
expect "exceptions" "$out" '"exceptions": \['
out=$($CURL "$URL/tasks")
expect "tasks" "$out" '"per_class": {'
out=$($CURL "$URL/stats/report")
expect "report" "$out" 'Request Statistics'
out=$($CURL "$URL/metrics")
expect "metrics" "$out" '^cicada_requests_total{'

# Stop and reset.
out=$($CURL "$URL/stop")
expect "stop" "$out" '"message": "Test stopped"'
expect "stop" "$out" '"success": true'
out=$($CURL "$URL/stats/requests")
expect "stopped" "$out" '"state": "stopped"'
out=$($CURL "$URL/stats/reset")
[ "$out" = "ok" ] || fail "reset: expected ok, got: $out"

echo "locust_api_client: ok"
