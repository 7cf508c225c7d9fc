#!/bin/sh
# Makes the snapshot files the golden test renders (tests/golden/*.mts): a
# run of the demo program (two snapshots two seconds apart, for diff) and of
# Debian's python3.11 (Python frames). Run by hand, as root, only when the
# snapshot format gains something the files should show; then
# tests/golden/run.sh --update rewrites the expected outputs, and the diff
# of those is reviewed like code.
#
#   sudo tests/golden/make-snapshots.sh BUILD_DIR
set -eu
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../e2e" && pwd)
tmp=/tmp/memtrace-golden # a neutral path: it is recorded in the snapshots
rm -rf "$tmp" && mkdir -p "$tmp"
cp "$src/demo.c" "$src/pylines.py" "$tmp/"
cd "$tmp"
cc -O1 -g -fno-omit-frame-pointer -fno-optimize-sibling-calls demo.c -o demo

"$build/memtraced" --socket "$tmp/d.sock" -- ./demo --seconds 6 2>"$tmp/d.log" &
dpid=$!
sleep 3
"$build/memtracectl" --socket "$tmp/d.sock" snapshot -o "$here/demo-1.mts"
sleep 2
"$build/memtracectl" --socket "$tmp/d.sock" snapshot -o "$here/demo-2.mts"
kill -TERM $dpid
wait $dpid || true

touch "$tmp/go"
"$build/memtraced" --socket "$tmp/p.sock" -- /usr/bin/python3.11 pylines.py "$tmp/go" >"$tmp/p.out" 2>"$tmp/p.log" &
dpid=$!
i=0
while ! grep -q done "$tmp/p.out" && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
"$build/memtracectl" --socket "$tmp/p.sock" snapshot -o "$here/python.mts"
rm -f "$tmp/go"
kill -TERM $dpid
wait $dpid || true
ls -l "$here"/*.mts
