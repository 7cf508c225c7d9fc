#!/bin/sh
# The phases of `make check`, timed: where CI's minutes go (docs/ci.md).
#
#   tests/phases.sh FILE start            forget the phases FILE holds
#   tests/phases.sh FILE run NAME CMD...  run CMD as phase NAME, append "NAME<TAB>seconds<TAB>
#                                         status" to FILE; if CMD fails, print the table and
#                                         exit with CMD's status
#   tests/phases.sh FILE table            print the table: each phase's wall seconds, the total
#
# The table's lines are indented, so none reads as a summary line .ci/run counts
# ("unit: N passed, N failed").
set -u
file=$1
what=$2
shift 2

table() {
	echo "phases (wall seconds):"
	awk -F '\t' '{
		printf "    %-14s %6d%s\n", $1, $2, ($3 == 0 ? "" : "  FAILED (status " $3 ")")
		total += $2
	} END { printf "    %-14s %6d\n", "total", total }' "$file"
}

case $what in
start)
	mkdir -p "$(dirname "$file")"
	: >"$file"
	;;
run)
	name=$1
	shift
	echo "== phase $name: $*"
	t0=$(date +%s)
	"$@"
	rc=$?
	t1=$(date +%s)
	printf '%s\t%d\t%d\n' "$name" $((t1 - t0)) $rc >>"$file"
	echo "== phase $name: $((t1 - t0)) s"
	if [ $rc -ne 0 ]; then
		table
		exit $rc
	fi
	;;
table)
	table
	;;
*)
	echo "usage: tests/phases.sh FILE start|run NAME CMD...|table" >&2
	exit 2
	;;
esac
