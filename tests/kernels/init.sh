#!/bin/busybox sh
# /init of the kernel matrix's initramfs (tests/kernels/run.py builds it): load the
# virtio, 9p and overlay modules, mount the host's / (shared read-only over 9p) under a
# tmpfs overlay, and switch to it to run the exchange folder's guest.sh.
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in $(cat /modules/order); do
	insmod /modules/$m 2>/dev/null || echo "init: insmod $m failed"
done
kver=$(uname -r)
kroot=$(sed -n 's/.*mt\.kroot=\([^ ]*\).*/\1/p' /proc/cmdline)
mount -t 9p -o ro,trans=virtio,version=9p2000.L,cache=loose,msize=512000 hostroot /lower ||
	{ echo "init: mounting the host's root over 9p failed"; poweroff -f; }
mount -t tmpfs -o mode=0755 rw /rw
mkdir -p /rw/upper /rw/work
mount -t overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work overlay /newroot ||
	{ echo "init: overlay failed"; poweroff -f; }
mount -t tmpfs -o mode=0755,nosuid,nodev run /newroot/run
mkdir -p /newroot/run/xchg /newroot/lib/modules/$kver
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 xchg /newroot/run/xchg ||
	{ echo "init: mounting the exchange folder failed"; poweroff -f; }
# the guest kernel's own modules where modprobe looks
[ -z "$kroot" ] || mount --bind /lower$kroot/lib/modules/$kver /newroot/lib/modules/$kver
umount /proc /sys /dev 2>/dev/null
exec switch_root /newroot /bin/sh /run/xchg/guest.sh
