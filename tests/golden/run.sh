#!/bin/sh
# The golden test: memtracectl renders the committed snapshot files
# (tests/golden/*.mts) in every view and format, and each output must equal
# the committed one byte for byte (tests/golden/expected/; pprof and HTML by
# their SHA-256, text over 64 KiB stored gzip-compressed). A refactoring of the
# client or the codec that changes one byte of output fails here.
#
#   tests/golden/run.sh BUILD_DIR            compare (no root needed)
#   tests/golden/run.sh BUILD_DIR --update   rewrite the expected outputs
set -u
ctl=$1/memtracectl
update=${2:-}
here=$(cd "$(dirname "$0")" && pwd)
exp=$here/expected
tmp=$(mktemp -d "${TMPDIR:-/tmp}/memtrace-golden.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0
[ "$update" = --update ] && mkdir -p "$exp"

# check NAME KIND SNAPSHOT ARGS...: KIND is text (compared as is) or hash
check() {
	name=$1 kind=$2 file=$3
	shift 3
	if ! "$ctl" --from "$here/$file" "$@" >"$tmp/out" 2>"$tmp/err"; then
		echo "FAIL golden.$name: memtracectl $*: $(head -c 300 "$tmp/err")"
		failed=$((failed + 1))
		return
	fi
	[ "$kind" = hash ] && sha256sum <"$tmp/out" | cut -d' ' -f1 >"$tmp/out.h" && mv "$tmp/out.h" "$tmp/out"
	compare "$name"
}

# compare NAME: $tmp/out against the expected output NAME (or NAME.gz)
compare() {
	name=$1
	rm -f "$tmp/want"
	if [ -f "$exp/$name.gz" ]; then
		gzip -dc "$exp/$name.gz" >"$tmp/want"
	elif [ -f "$exp/$name" ]; then
		cp "$exp/$name" "$tmp/want"
	fi
	if [ "$update" = --update ]; then
		rm -f "$exp/$name" "$exp/$name.gz"
		if [ "$(wc -c <"$tmp/out")" -gt 65536 ]; then
			gzip -9n <"$tmp/out" >"$exp/$name.gz"
		else
			cp "$tmp/out" "$exp/$name"
		fi
	elif [ -f "$tmp/want" ] && cmp -s "$tmp/out" "$tmp/want"; then
		passed=$((passed + 1))
	else
		echo "FAIL golden.$name: the output differs from tests/golden/expected/$name:"
		diff "$tmp/want" "$tmp/out" 2>&1 | head -10 | sed 's/^/    | /'
		failed=$((failed + 1))
	fi
}

# diff NAME ARGS...: memtracectl diff of the two demo snapshots
check_diff() {
	name=$1
	shift
	check_diff_of "$name" demo-1.mts demo-2.mts "$@"
}

# diff_of NAME OLD NEW ARGS...: memtracectl diff of two snapshots
check_diff_of() {
	name=$1 old=$2 new=$3
	shift 3
	if ! "$ctl" diff "$here/$old" "$here/$new" "$@" >"$tmp/out" 2>"$tmp/err"; then
		echo "FAIL golden.$name: memtracectl diff $*: $(head -c 300 "$tmp/err")"
		failed=$((failed + 1))
		return
	fi
	compare "$name"
}

for snap in demo-2 python; do
	f=$snap.mts
	check $snap.status text $f status
	check $snap.status.json text $f status --json
	check $snap.stats text $f stats
	check $snap.stats.json text $f stats --json
	check $snap.report text $f report
	check $snap.report.all.json text $f report --top 0 --format json
	for sort in allocated count peak temporary; do
		check $snap.report.$sort text $f report --sort $sort --top 5
	done
	check $snap.report.oldest text $f report --oldest --top 5
	for by in function file line module stack; do
		check $snap.report.by-$by text $f report --by $by --top 20
		[ $by = stack ] || check $snap.report.by-$by.cumulative text $f report --by $by --cumulative --top 20
	done
	check $snap.report.by-line.json text $f report --by line --format json
	for sample in live allocated count peak; do
		check $snap.folded.$sample text $f report --format folded --sample $sample
		check $snap.html.$sample hash $f report --format html --sample $sample
	done
	check $snap.pprof hash $f report --format pprof
	check $snap.pprof.peak hash $f report --format pprof --peak
	check $snap.peak text $f peak
	check $snap.peak.by-line text $f peak --by line --top 5
	check $snap.peak.json text $f peak --format json
	check $snap.leaks text $f leaks
	check $snap.leaks.1s text $f leaks --older-than 1s --top 3
	check $snap.leaks.json text $f leaks --format json
	check $snap.timeline text $f timeline
	check $snap.timeline.json text $f timeline --json
done
# resident memory and a breakdown by mapping (sections 45 and 46): frag.mts only,
# the older files above render as they did before those sections existed
f=frag.mts
check frag.status text $f status
check frag.stats text $f stats
check frag.stats.json text $f stats --json
check frag.stats.memory text $f stats --memory
check frag.stats.memory.json text $f stats --memory --json
check frag.timeline text $f timeline
check frag.report text $f report
check frag.report.json text $f report --format json
check frag.report.pid text $f report --pid 23530
check frag.timeline.json text $f timeline --json
check frag.html.live hash $f report --format html
# memory over time per target (section 52): targets.mts, two frag processes,
# 31055 attached 1.5 s after 31092 was traced from its start
f=targets.mts
check targets.timeline text $f timeline
check targets.timeline.json text $f timeline --json
check targets.timeline.pid text $f timeline --pid 31092
check targets.timeline.pid2 text $f timeline --pid 31055 --rows 5
check targets.timeline.pid2.json text $f timeline --pid 31055 --json
check targets.report.pid2.json text $f report --pid 31055 --format json
check targets.html.pid2 hash $f report --format html --pid 31055
# a target's cgroup (sections SEC_CGROUP, SEC_TIMELINE_CGROUP): cgroup.mts, frag 24417 in a v1 memory cgroup
# limited to 64 MiB, started from another cgroup (the shell's entry keeps that one)
f=cgroup.mts
check cgroup.status text $f status
check cgroup.status.json text $f status --json
check cgroup.stats text $f stats
check cgroup.stats.json text $f stats --json
check cgroup.pprof hash $f report --format pprof
check cgroup.timeline.pid text $f timeline --pid 24417
check cgroup.timeline.pid.json text $f timeline --pid 24417 --json
check cgroup.html.pid hash $f report --format html --pid 24417
# rows by the labels (the pid's newest entry: the shell's stacks go to /memtrace-golden),
# and the --cgroup filter (the unified path "/" matches too)
for by in cgroup unit container; do
	check cgroup.report.by-$by text $f report --by $by
	check cgroup.report.by-$by.json text $f report --by $by --json
done
check cgroup.peak.by-cgroup text $f peak --by cgroup
check cgroup.peak.by-cgroup.json text $f peak --by cgroup --json
check cgroup.report.cgroup text $f report --cgroup /memtrace-golden --top 3
check cgroup.report.by-function.cgroup.json text $f report --by function --cgroup /memtrace-golden --json
check cgroup.peak.cgroup-other text $f peak --cgroup /memtrace-golden-host
check_diff_of cgroup.diff.by-cgroup cgroup.mts oom.mts --by cgroup
check_diff_of cgroup.diff.by-cgroup.json cgroup.mts oom.mts --by cgroup --json
check_diff_of cgroup.diff.cgroup cgroup.mts oom.mts --by function --cgroup /memtrace-golden-oom

# an OOM kill's mark (section SEC_OOM): oom.mts, the snapshot --oom-snapshots wrote when
# tests/e2e/oomhog.c was killed in a 64 MiB memory cgroup
f=oom.mts
check oom.status text $f status
check oom.status.json text $f status --json
check oom.stats.json text $f stats --json
check oom.report text $f report --top 1
for by in function line stack; do
	check_diff diff.by-$by --by $by
	check_diff diff.by-$by.json --by $by --format json
done
check_diff diff.cumulative --by function --cumulative --top 0

if [ "$update" = --update ]; then
	echo "golden: expected outputs rewritten in tests/golden/expected/"
	exit 0
fi
echo "golden: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
