#!/bin/sh
# Makes the snapshot files the golden test renders (tests/golden/*.mts): a
# run of the demo program (two snapshots two seconds apart, for diff), of
# Debian's python3.11 (Python frames), of tests/e2e/frag.c (resident
# memory, a breakdown by mapping), of two frag processes (memory over
# time per target), of frag in a v1 memory cgroup limited to 64 MiB (a
# target's cgroup, section SEC_CGROUP) and of tests/e2e/oomhog.c OOM-killed in
# a 64 MiB memory cgroup (the snapshot --oom-snapshots writes: section
# SEC_OOM). Run by hand, as root, only when the
# snapshot format gains something the files should show; then
# tests/golden/run.sh --update rewrites the expected outputs, and the diff
# of those is reviewed like code.
#
#   sudo tests/golden/make-snapshots.sh BUILD_DIR [demo|python|frag|targets|cgroup|oom]...
#
# Name the ones to make: the others' renders must stay byte for byte what
# they are (older files read as before), so they are remade only on purpose.
set -eu
build=$(cd "$1" && pwd)
shift
which=${*:-demo python frag targets cgroup oom}
want() { case " $which " in *" $1 "*) return 0 ;; esac; return 1; }
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../e2e" && pwd)
tmp=/tmp/memtrace-golden # a neutral path: it is recorded in the snapshots
rm -rf "$tmp" && mkdir -p "$tmp"
cp "$src/demo.c" "$src/pylines.py" "$src/frag.c" "$src/oomhog.c" "$tmp/"
cd "$tmp"
cc -O1 -g -fno-omit-frame-pointer -fno-optimize-sibling-calls demo.c -o demo
cc -O1 -g -fno-omit-frame-pointer -fno-optimize-sibling-calls frag.c -o frag
cc -O1 -g -fno-omit-frame-pointer -fno-optimize-sibling-calls oomhog.c -o oomhog

if want demo; then
"$build/memtraced" --socket "$tmp/d.sock" -- ./demo --seconds 6 2>"$tmp/d.log" &
dpid=$!
sleep 3
"$build/memtracectl" --socket "$tmp/d.sock" snapshot -o "$here/demo-1.mts"
sleep 2
"$build/memtracectl" --socket "$tmp/d.sock" snapshot -o "$here/demo-2.mts"
kill -TERM $dpid
wait $dpid || true
fi

if want python; then
touch "$tmp/go"
"$build/memtraced" --socket "$tmp/p.sock" -- /usr/bin/python3.11 pylines.py "$tmp/go" >"$tmp/p.out" 2>"$tmp/p.log" &
dpid=$!
i=0
while ! grep -q done "$tmp/p.out" && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
"$build/memtracectl" --socket "$tmp/p.sock" snapshot -o "$here/python.mts"
rm -f "$tmp/go"
kill -TERM $dpid
wait $dpid || true
fi

# 8 MiB in 1 KiB blocks, nine in ten freed: resident stays, sampled every 250 ms
if want frag; then
"$build/memtraced" --socket "$tmp/f.sock" --sample-interval 250 -- ./frag --no-wait --total-mb 8 \
	>"$tmp/f.out" 2>"$tmp/f.log" &
dpid=$!
i=0
while ! grep -q expect "$tmp/f.out" 2>/dev/null && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
sleep 2
"$build/memtracectl" --socket "$tmp/f.sock" snapshot -o "$here/frag.mts"
fpid=$(sed -n 's/^ready //p' "$tmp/f.out")
kill -TERM $dpid
wait $dpid || true
kill -TERM "$fpid" 2>/dev/null || true
fi
# two frag processes, the second attached a second after the first: each timeline point
# keeps the figures of the targets traced then (section 52), for timeline --pid
if want targets; then
"$build/memtraced" --socket "$tmp/t.sock" --sample-interval 250 -- ./frag --no-wait --total-mb 8 \
	>"$tmp/t1.out" 2>"$tmp/t.log" &
dpid=$!
./frag --total-mb 4 --keep 2 >"$tmp/t2.out" 2>&1 &
bpid=$!
i=0
while ! grep -q expect "$tmp/t1.out" 2>/dev/null && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
sleep 1
"$build/memtracectl" --socket "$tmp/t.sock" attach $bpid >/dev/null
kill -USR1 $bpid
i=0
while ! grep -q expect "$tmp/t2.out" 2>/dev/null && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
sleep 2
"$build/memtracectl" --socket "$tmp/t.sock" snapshot -o "$here/targets.mts"
apid=$(sed -n 's/^ready //p' "$tmp/t1.out")
echo "targets.mts: pids $apid (traced from its start) and $bpid (attached)"
kill -TERM $dpid
wait $dpid || true
kill -TERM "$apid" $bpid 2>/dev/null || true
fi
# a target in a cgroup of the v1 memory controller limited to 64 MiB (section
# SEC_CGROUP): its labels and the cgroup's usage beside the limit
if want cgroup; then
cg=/sys/fs/cgroup/memory/memtrace-golden
host=/sys/fs/cgroup/memory/memtrace-golden-host # a neutral cgroup to start from: it is recorded
mkdir -p $cg $host
echo 67108864 >$cg/memory.limit_in_bytes
sh -c "echo \$\$ > $host/cgroup.procs; exec \"$build/memtraced\" --socket \"$tmp/c.sock\" \
	--sample-interval 250 -- sh -c 'echo \$\$ > $cg/cgroup.procs; exec ./frag --no-wait --total-mb 8'" \
	>"$tmp/c1.out" 2>"$tmp/c.log" &
dpid=$!
i=0
while ! grep -q expect "$tmp/c1.out" 2>/dev/null && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
sleep 1
"$build/memtracectl" --socket "$tmp/c.sock" snapshot -o "$here/cgroup.mts"
cpid=$(sed -n 's/^ready //p' "$tmp/c1.out")
echo "cgroup.mts: pid $cpid in $cg"
kill -TERM $dpid
wait $dpid || true
kill -TERM "$cpid" 2>/dev/null || true
i=0
while ! rmdir $cg $host 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
fi

# oomhog in a 64 MiB v1 memory cgroup (these hosts' hybrid hierarchy), killed by the
# OOM killer: the snapshot memtraced writes to --oom-snapshots, as it is
if want oom; then
cg=/sys/fs/cgroup/memory/memtrace-golden-oom
host=/sys/fs/cgroup/memory/memtrace-golden-host # a neutral cgroup to start from: it is recorded
mkdir "$cg" "$host"
echo 67108864 >"$cg/memory.limit_in_bytes"
echo 0 >"$cg/memory.swappiness"
mkdir "$tmp/oom"
sh -c "echo \$\$ > $host/cgroup.procs; exec \"$build/memtraced\" --socket \"$tmp/o.sock\" \
	--oom-snapshots oom -- sh -c 'echo \$\$ > $cg/cgroup.procs && exec ./oomhog'" \
	>"$tmp/o.out" 2>"$tmp/o.log" &
dpid=$!
i=0
while ! ls oom/oom-*.mts >/dev/null 2>&1 && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
cp oom/oom-*.mts "$here/oom.mts"
kill -TERM $dpid
wait $dpid || true
i=0
while ! rmdir "$cg" "$host" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
fi
ls -l "$here"/*.mts
