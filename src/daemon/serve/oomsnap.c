// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The files of --oom-snapshots (oomsnap.h): written whole or not at all, and
 * pruned to the newest --oom-keep. Runs on a request lane: it may wait for
 * the disk without the ring buffer's drain waiting.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "daemon/serve/oomsnap.h"
#include "common/util.h"

int oomsnap_check_dir(const char *dir, char *err, size_t errlen)
{
	char probe[4096];
	struct stat st;
	int fd;

	if (stat(dir, &st)) {
		snprintf(err, errlen, "--oom-snapshots %s: %s", dir, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "--oom-snapshots %s: not a folder", dir);
		return -1;
	}
	/* root passes access(): a read-only file system does not */
	snprintf(probe, sizeof(probe), "%s/.memtrace-oom-check-%d", dir, (int)getpid());
	fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		snprintf(err, errlen, "--oom-snapshots %s: cannot write there: %s", dir,
			 strerror(errno));
		return -1;
	}
	close(fd);
	unlink(probe);
	return 0;
}

static int write_all(int fd, const uint8_t *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int oomsnap_write(const struct oomsnap_job *j, const uint8_t *bytes, size_t len, char *path,
		  size_t pathlen, char *err, size_t errlen)
{
	time_t secs = (time_t)(j->unix_ns / 1000000000ull);
	char tmp[4200], stamp[32];
	struct tm tm;
	int fd, bad;

	gmtime_r(&secs, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
	snprintf(path, pathlen, "%s/oom-%u-%s.mts", j->dir, j->pid, stamp);
	snprintf(tmp, sizeof(tmp), "%s/.oom-%u-%s.mts.part", j->dir, j->pid, stamp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
		return -1;
	}
	bad = write_all(fd, bytes, len) || fsync(fd);
	if (bad)
		snprintf(err, errlen, "cannot write %s: %s", path,
			 errno ? strerror(errno) : "short write");
	if (close(fd) && !bad) {
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
		bad = 1;
	}
	if (!bad && rename(tmp, path)) {
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
		bad = 1;
	}
	if (bad) {
		unlink(tmp);
		return -1;
	}
	oomsnap_prune(j->dir, j->keep);
	return 0;
}

struct oomfile {
	char name[256];
	struct timespec mtime;
};

static int older_first(const void *a, const void *b)
{
	const struct oomfile *x = a, *y = b;

	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
	if (x->mtime.tv_nsec != y->mtime.tv_nsec)
		return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
	return strcmp(x->name, y->name);
}

int oomsnap_prune(const char *dir, uint64_t keep)
{
	struct oomfile *files = NULL;
	size_t n = 0, cap = 0, len;
	struct dirent *e;
	struct stat st;
	int removed = 0;
	DIR *dp;

	if (!keep || !(dp = opendir(dir)))
		return 0;
	while ((e = readdir(dp))) {
		len = strlen(e->d_name);
		if (strncmp(e->d_name, "oom-", 4) || len < 8 || len >= sizeof(files->name) ||
		    strcmp(e->d_name + len - 4, ".mts") ||
		    fstatat(dirfd(dp), e->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 32;
			files = xrealloc(files, cap * sizeof(*files));
		}
		memcpy(files[n].name, e->d_name, len + 1);
		files[n++].mtime = st.st_mtim;
	}
	if (n > keep) {
		qsort(files, n, sizeof(*files), older_first);
		for (size_t i = 0; i < n - keep; i++)
			removed += !unlinkat(dirfd(dp), files[i].name, 0);
	}
	closedir(dp);
	free(files);
	return removed;
}
