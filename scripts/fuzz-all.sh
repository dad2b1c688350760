#!/usr/bin/env bash
# Runs every fuzz target of the module for a short time (make fuzz, CI).
# Go's fuzzing engine now and then fails a run that found nothing with a bare
# "context deadline exceeded" when -fuzztime expires mid-batch; such a run is
# retried once. A real finding ("Failing input written") fails at once.
set -uo pipefail
cd "$(dirname "$0")/.."
fuzztime=${1:-5s}
failed=0
for pkg in $(go list ./...); do
	for f in $(go test -list '^Fuzz' "$pkg" 2>/dev/null | grep '^Fuzz' || true); do
		for try in 1 2; do
			echo "fuzz $pkg $f"
			out=$(go test -run '^$' -fuzz "^$f\$" -fuzztime "$fuzztime" "$pkg" 2>&1)
			rc=$?
			echo "$out" | tail -n 20
			if [ $rc -eq 0 ]; then break; fi
			if [ $try -eq 1 ] && grep -q 'context deadline exceeded' <<<"$out" && ! grep -q 'Failing input written' <<<"$out"; then
				echo "fuzz $pkg $f: engine timeout without a finding; retrying once"
				continue
			fi
			failed=1
			break
		done
	done
done
exit $failed
