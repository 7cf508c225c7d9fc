#!/bin/sh
# Traces the bundled demo program (tests/e2e/demo.c) with memtraced for a few seconds and shows
# what memtracectl reports: the two call sites that leak, and the totals. Used by `make demo`.
#
#   sudo tests/demo.sh BUILD_DIR
set -u

build=${1:-}
if [ -z "$build" ] || [ $# -ne 1 ]; then
	echo "usage: tests/demo.sh BUILD_DIR" >&2
	exit 2
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "demo: memtraced needs root to load its BPF probes; run it with sudo (sudo make demo)" >&2
	exit 1
fi
for f in memtraced memtracectl tests/demo; do
	if [ ! -x "$build/$f" ]; then
		echo "demo: $build/$f is missing; build it with make first" >&2
		exit 1
	fi
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/memtrace-demo.XXXXXX") || exit 1
sock=$tmp/memtraced.sock
demo_pid=
daemon_pid=

# Stop a process we started: SIGTERM, up to 10 s to exit, then SIGKILL.
stop() {
	[ -n "$1" ] || return 0
	kill -TERM "$1" 2>/dev/null || return 0
	i=0
	while kill -0 "$1" 2>/dev/null && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	kill -KILL "$1" 2>/dev/null
	wait "$1" 2>/dev/null
}

cleanup() {
	stop "$daemon_pid"
	stop "$demo_pid"
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ctl() {
	"$build/memtracectl" --socket "$sock" "$@"
}

fail() {
	echo "demo: $1" >&2
	if [ -s "$tmp/memtraced.log" ]; then
		echo "--- memtraced log ---" >&2
		tail -n 20 "$tmp/memtraced.log" >&2
	fi
	exit 1
}

"$build/tests/demo" --seconds 60 >"$tmp/demo.out" 2>&1 &
demo_pid=$!
echo "Started the demo program (pid $demo_pid): a toy request loop that allocates all the time."
echo "It leaks on purpose from two functions, cache_insert and parse_request."
echo

"$build/memtraced" --socket "$sock" --pid "$demo_pid" >/dev/null 2>"$tmp/memtraced.log" &
daemon_pid=$!
echo "Attaching memtraced to it: uprobes on malloc, free and friends; no restart, no LD_PRELOAD."

i=0
until ctl status --json 2>/dev/null | grep -Eq '"state": *"attached"'; do
	kill -0 "$daemon_pid" 2>/dev/null || fail "memtraced stopped before attaching"
	kill -0 "$demo_pid" 2>/dev/null || fail "the demo program exited early"
	[ $i -lt 300 ] || fail "memtraced did not attach within 30 s"
	sleep 0.1
	i=$((i + 1))
done

seconds=5
echo "Attached. Letting the demo run for $seconds seconds while memtraced counts every call..."
sleep $seconds
echo

cat <<'EOF'
==============================================================================================
memtracectl report --top 10
  The call stacks that hold the most memory right now. "Live" is memory allocated since
  memtraced attached and not freed yet: cache_insert (a cache that never evicts) and
  parse_request (a header it forgets to free) should lead, and keep growing if you look again.
  Everything the demo frees (render_response's buffer, request bodies) has no live bytes.
==============================================================================================
EOF
ctl report --top 10 || fail "memtracectl report failed"
echo

cat <<'EOF'
==============================================================================================
memtracectl stats
  Totals since attach: allocations and frees are counted separately; live = allocated - freed;
  peak is the most that was ever live at once; unknown frees are frees of blocks allocated
  before memtraced attached; lost events (should be 0) would make the numbers approximate.
==============================================================================================
EOF
ctl stats || fail "memtracectl stats failed"
echo

echo "Stopping memtraced (the demo keeps running unharmed when it detaches), then the demo."
stop "$daemon_pid"
daemon_pid=
stop "$demo_pid"
demo_pid=
echo "Done. Try it on your own program: sudo $build/memtraced --pid PID, then memtracectl report."
