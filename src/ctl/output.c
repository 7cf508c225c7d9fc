// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Writing output (see output.h): stdout, or one atomic file writer for
 * every file memtracectl writes, snapshots and reports alike.
 */
#include "ctl/output.h"
#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * Files are created 0600, reports as well as snapshots. A snapshot holds
 * command lines, module paths, symbol names and the addresses of a running
 * process; a report is made of the same (the text and pprof forms name
 * modules and addresses, the HTML page carries the command line). memtraced
 * gives them only to root and the memtrace group (its socket is 0660), and a
 * world-readable copy in /tmp would undo that. Who wants to share a file can
 * chmod it, or redirect stdout, where the shell's umask decides.
 */
#define OUTPUT_FILE_MODE 0600

int write_stdout(const void *data, size_t len)
{
	if ((len && fwrite(data, 1, len, stdout) != len) || fflush(stdout)) {
		log_msg("stdout: %s", strerror(errno));
		return -1;
	}
	return 0;
}

int write_output(const char *path, const void *data, size_t len)
{
	if (!path || !strcmp(path, "-"))
		return write_stdout(data, len);
	return write_file_atomic(path, data, len);
}

static int write_all(int fd, const void *data, size_t len)
{
	const char *p = data;

	while (len) {
		ssize_t w = write(fd, p, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

/* Make a rename in path's directory durable. Best effort: the file is
 * already whole under its name, and a directory we may not open for reading
 * is no reason to fail. */
static void sync_directory(const char *path)
{
	char *copy = xstrdup(path);
	int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
	free(copy);
}

int write_file_atomic(const char *path, const void *data, size_t len)
{
	size_t tmp_len = strlen(path) + 32;
	char *tmp = xmalloc(tmp_len);
	int fd, err = 0;

	snprintf(tmp, tmp_len, "%s.tmp.%d", path, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, OUTPUT_FILE_MODE);
	if (fd < 0) {
		log_msg("cannot create %s: %s", tmp, strerror(errno));
		free(tmp);
		return -1;
	}
	if (write_all(fd, data, len) || fsync(fd))
		err = errno;
	if (close(fd) && !err)
		err = errno;
	if (!err && rename(tmp, path))
		err = errno;
	if (err) {
		log_msg("cannot write %s: %s", path, strerror(err));
		unlink(tmp);
	} else {
		sync_directory(path);
	}
	free(tmp);
	return err ? -1 : 0;
}
