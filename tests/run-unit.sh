#!/bin/sh
# Runs each unit test binary given; prints one summary line for all of them.
passed=0
failed=0
for t in "$@"; do
	out=$("$t" 2>&1)
	rc=$?
	echo "$out" | sed 's/^/  /'
	line=$(echo "$out" | grep -E '[0-9]+ passed, [0-9]+ failed' | tail -n 1)
	p=$(echo "$line" | sed -E 's/.* ([0-9]+) passed.*/\1/')
	f=$(echo "$line" | sed -E 's/.* ([0-9]+) failed.*/\1/')
	[ -n "$p" ] || p=0
	[ -n "$f" ] || f=0
	if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then
		f=1
		echo "  $t exited with status $rc"
	fi
	passed=$((passed + p))
	failed=$((failed + f))
done
echo "unit: $passed passed, $failed failed"
[ $failed -eq 0 ]
