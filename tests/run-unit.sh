#!/bin/sh
# Runs each unit test binary given; prints one summary line for all of them.
# A binary built from tests/unit/NAME.c must run as many tests as that file
# has lines starting with TEST(: a test defined but not run is a failure.
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
	src=tests/unit/$(basename "$t").c
	if [ -f "$src" ]; then
		defined=$(grep -c '^TEST(' "$src")
		ran=$((p + f))
		if [ "$defined" -ne "$ran" ]; then
			f=$((f + 1))
			echo "  $src defines $defined tests, $ran ran"
		fi
	fi
	passed=$((passed + p))
	failed=$((failed + f))
done
echo "unit: $passed passed, $failed failed"
[ $failed -eq 0 ]
