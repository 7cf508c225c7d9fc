#!/bin/sh
# Run each libFuzzer target for SECONDS on its committed seeds.
#   tests/fuzz/run.sh DIR SECONDS TARGET...
# DIR holds fuzz_TARGET binaries; new inputs go to DIR/corpus-TARGET (the seeds in
# tests/fuzz/corpus/TARGET/ are only read). A crash, leak, timeout or sanitizer report
# fails the run: the log's tail is printed and the reproducer is left in DIR.
set -u
dir=$1
secs=$2
shift 2
here=$(dirname "$0")
status=0
for t in "$@"; do
	mkdir -p "$dir/corpus-$t"
	log="$dir/fuzz_$t.log"
	if "$dir/fuzz_$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
		-malloc_limit_mb=1024 -artifact_prefix="$dir/crash-$t-" \
		"$dir/corpus-$t" "$here/corpus/$t" >"$log" 2>&1; then
		runs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$log" | tail -n 1)
		echo "PASS fuzz_$t: ${runs:-?} runs in ${secs} s, no crash, leak or sanitizer report"
	else
		echo "FAIL fuzz_$t: see $log"
		tail -n 30 "$log" | sed 's/^/    | /'
		status=1
	fi
done
exit $status
