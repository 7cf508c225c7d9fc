// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* A cgroup match's paths (src/daemon/proc/cgpath.c), on fixtures. */
#include "unit.h"

#include <stdint.h>

#include "daemon/proc/cgpath.h"

static const char hybrid[] =
    "24 30 0:22 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw\n"
    "29 24 0:26 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs ro,mode=755\n"
    "30 29 0:27 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:10 - cgroup2 "
    "cgroup2 rw,nsdelegate\n"
    "31 29 0:28 / /sys/fs/cgroup/memory rw,nosuid shared:14 - cgroup cgroup rw,memory\n";

static const char v2only[] = "29 24 0:26 / /sys/fs/cgroup rw,nosuid shared:9 - cgroup2 cgroup2 "
			     "rw,nsdelegate,memory_recursiveprot\n";

TEST(mount_found)
{
	char out[CGPATH_MAX];

	CHECK(!cgpath_find_mount(hybrid, out, sizeof(out)));
	CHECK_STR(out, "/sys/fs/cgroup/unified");
	CHECK(!cgpath_find_mount(v2only, out, sizeof(out)));
	CHECK_STR(out, "/sys/fs/cgroup");
	/* v1 only: none; a mount point with a space, escaped */
	CHECK(cgpath_find_mount("31 29 0:28 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n",
				out, sizeof(out)) < 0);
	CHECK(cgpath_find_mount("", out, sizeof(out)) < 0);
	CHECK(!cgpath_find_mount("1 2 0:3 / /mnt/c\\040g rw - cgroup2 none rw", out, sizeof(out)));
	CHECK_STR(out, "/mnt/c g");
	/* too small an output: not found rather than cut */
	CHECK(cgpath_find_mount(v2only, out, 5) < 0);
}

TEST(paths_relative)
{
	char out[CGPATH_MAX], err[256] = "";
	uint32_t level = 99;

	CHECK(!cgpath_relative("/sys/fs/cgroup/unified", "/sys/fs/cgroup/unified/a/b", out,
			       sizeof(out), &level, err, sizeof(err)));
	CHECK_STR(out, "/a/b");
	CHECK_EQ_U64(level, 2);
	CHECK(!cgpath_relative("/sys/fs/cgroup", "system.slice//nginx.service/", out, sizeof(out),
			       &level, err, sizeof(err)));
	CHECK_STR(out, "/system.slice/nginx.service");
	CHECK_EQ_U64(level, 2);
	CHECK(!cgpath_relative("/sys/fs/cgroup", "/libpod_parent/./x", out, sizeof(out), &level,
			       err, sizeof(err)));
	CHECK_STR(out, "/libpod_parent/x");
	CHECK(!cgpath_relative("/sys/fs/cgroup", "/sys/fs/cgroup", out, sizeof(out), &level, err,
			       sizeof(err)));
	CHECK_STR(out, "/");
	CHECK_EQ_U64(level, 0);
	CHECK(cgpath_relative("/sys/fs/cgroup", "/a/../b", out, sizeof(out), &level, err,
			      sizeof(err)) < 0);
	CHECK(strstr(err, "'..'") != NULL);
	/* a v1 controller's directory on a hybrid host */
	CHECK(cgpath_relative("/sys/fs/cgroup/unified", "/sys/fs/cgroup/memory/x", out, sizeof(out),
			      &level, err, sizeof(err)) < 0);
	CHECK(strstr(err, "not in the cgroup v2 hierarchy") != NULL);
	/* the prefix must end at a component */
	CHECK(cgpath_relative("/sys/fs/cgroup/unified", "/sys/fs/cgroup/unifiedx", out, sizeof(out),
			      &level, err, sizeof(err)) < 0);
	CHECK(cgpath_relative("/m", "/a/bcdef", out, 6, &level, err, sizeof(err)) < 0);
}

TEST(proc_cgroup)
{
	char out[CGPATH_MAX];

	CHECK(!cgpath_of_proc("12:memory:/x\n1:name=systemd:/\n0::/libpod_parent/libpod-ab\n", out,
			      sizeof(out)));
	CHECK_STR(out, "/libpod_parent/libpod-ab");
	CHECK(!cgpath_of_proc("0::/\n", out, sizeof(out)));
	CHECK_STR(out, "/");
	CHECK(cgpath_of_proc("4:memory:/x\n", out, sizeof(out)) < 0);
	CHECK(cgpath_of_proc("0::\n", out, sizeof(out)) < 0);
	CHECK(cgpath_of_proc("0::/abcdef\n", out, 4) < 0);
}

TEST(under)
{
	CHECK(cgpath_under("/a/b", "/a"));
	CHECK(cgpath_under("/a", "/a"));
	CHECK(!cgpath_under("/ab", "/a"));
	CHECK(!cgpath_under("/", "/a"));
	CHECK(cgpath_under("/x/y", "/"));
	CHECK(cgpath_under("/a/b/c", "/a/b"));
}

TEST(unit_names)
{
	char out[256], err[256];

	CHECK(!cgpath_unit_dir("nginx", out, sizeof(out), err, sizeof(err)));
	CHECK_STR(out, "nginx.service");
	CHECK(!cgpath_unit_dir("session-3.scope", out, sizeof(out), err, sizeof(err)));
	CHECK_STR(out, "session-3.scope");
	CHECK(!cgpath_unit_dir("machine.slice", out, sizeof(out), err, sizeof(err)));
	CHECK_STR(out, "machine.slice");
	CHECK(cgpath_unit_dir("", out, sizeof(out), err, sizeof(err)) < 0);
	CHECK(cgpath_unit_dir("a/b", out, sizeof(out), err, sizeof(err)) < 0);
	CHECK(cgpath_unit_dir(".service", out, sizeof(out), err, sizeof(err)) == 0);
	CHECK_STR(out, ".service.service");
}

UNIT_MAIN()
