# PID 1 of a kernel matrix guest (tests/kernels/run.py), on the host's root (overlayed,
# writable, thrown away at power-off): mount what the daemon and the end-to-end tests use,
# run steps.sh (each step's stdout, stderr, status and times into /run/xchg), power off.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root TERM=dumb LANG=C.UTF-8
X=/run/xchg
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mkdir -p /dev/pts /dev/shm /dev/mqueue
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /dev/pts
mount -t tmpfs -o mode=1777,nosuid,nodev shm /dev/shm
mount -t mqueue mqueue /dev/mqueue 2>/dev/null
ln -sf /proc/self/fd /dev/fd
ln -sf /proc/self/fd/0 /dev/stdin
ln -sf /proc/self/fd/1 /dev/stdout
ln -sf /proc/self/fd/2 /dev/stderr
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
mount -t bpf bpf /sys/fs/bpf 2>/dev/null
mount -t cgroup2 cgroup2 /sys/fs/cgroup 2>/dev/null
# a tmpfs on /tmp, unless the checkout is there (a clone under /tmp): it would hide it
case "$(cat $X/repo 2>/dev/null)" in
/tmp | /tmp/*) ;;
*) mount -t tmpfs -o mode=1777,nosuid,nodev tmp /tmp ;;
esac
mkdir -p /run/memtrace /run/lock /run/user/0
hostname memtrace-guest
ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up 2>/dev/null

now() { awk '{print $1}' /proc/uptime; }
# step NAME SECONDS COMMAND [ARGS...]: one step, killed after SECONDS
step() {
	name=$1 seconds=$2
	shift 2
	now > $X/$name.start
	timeout -k 10 "$seconds" "$@" > $X/$name.out 2> $X/$name.err < /dev/null
	echo $? > $X/$name.rc
	now > $X/$name.end
	sync
}
{
	uname -r
	uname -v
	nproc
	awk '/MemTotal/ {print $2}' /proc/meminfo
} > $X/guest.info
now > $X/booted
. $X/steps.sh
sync
echo o > /proc/sysrq-trigger
# PID 1 must not exit (a panic) while the power-off goes on, and the root it would run
# sleep from is going: a shell builtin loop
while :; do :; done
