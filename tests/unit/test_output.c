// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Tests of memtracectl's one file writer (src/ctl/output.c): it writes the
 * bytes, replaces a file that is there, creates it 0600, and on failure says
 * so in one line and leaves neither a temporary file nor a changed target.
 */
#include "unit.h"
#include "capture.h"

#include "ctl/output.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[64];

static void make_dir(void)
{
	snprintf(dir, sizeof(dir), "/tmp/memtrace-test-output.XXXXXX");
	if (!mkdtemp(dir))
		abort();
}

static void remove_dir(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd))
		abort();
}

static void path_in_dir(char *dst, size_t len, const char *name)
{
	snprintf(dst, len, "%s/%s", dir, name);
}

/* The whole content of path, NUL-terminated (malloc'd), or NULL. */
static char *read_file(const char *path)
{
	char *s = calloc(1, 4096);
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0) {
		free(s);
		return NULL;
	}
	n = read(fd, s, 4095);
	close(fd);
	if (n < 0) {
		free(s);
		return NULL;
	}
	return s;
}

/* Entries in dir other than . and .. */
static int count_entries(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	if (d)
		closedir(d);
	return n;
}

static mode_t file_mode(const char *path)
{
	struct stat st;

	return stat(path, &st) ? (mode_t)-1 : st.st_mode & 07777;
}

TEST(test_writes_new_file_0600)
{
	char path[128], *got;

	make_dir();
	path_in_dir(path, sizeof(path), "report.txt");
	CHECK(!write_file_atomic(path, "hello\n", 6));
	got = read_file(path);
	CHECK_STR(got, "hello\n");
	CHECK_EQ_U64(file_mode(path), 0600);
	CHECK_EQ_U64(count_entries(), 1);
	free(got);

	/* nothing at all is a file too */
	path_in_dir(path, sizeof(path), "empty");
	CHECK(!write_file_atomic(path, "", 0));
	got = read_file(path);
	CHECK_STR(got, "");
	free(got);
	remove_dir();
}

TEST(test_replaces_existing_file)
{
	char path[128], *got;
	int fd;

	make_dir();
	path_in_dir(path, sizeof(path), "snap.mts");
	fd = open(path, O_WRONLY | O_CREAT, 0644);
	CHECK(fd >= 0 && write(fd, "an older and longer content", 27) == 27);
	close(fd);
	CHECK(!write_file_atomic(path, "new", 3));
	got = read_file(path);
	CHECK_STR(got, "new");
	/* a new file took the name: the mode is the writer's, not the old file's */
	CHECK_EQ_U64(file_mode(path), 0600);
	CHECK_EQ_U64(count_entries(), 1);
	free(got);
	remove_dir();
}

TEST(test_failure_leaves_nothing)
{
	char path[128], sub[128], *err;

	make_dir();
	/* rename over a directory fails after the temporary file was written */
	path_in_dir(sub, sizeof(sub), "a-directory");
	CHECK(!mkdir(sub, 0700));
	capture_stderr_begin();
	CHECK(write_file_atomic(sub, "x", 1) == -1);
	err = capture_stderr_end();
	CHECK(strstr(err, "cannot write ") != NULL);
	CHECK(strstr(err, "a-directory: Is a directory\n") != NULL);
	CHECK(strchr(err, '\n') == err + strlen(err) - 1);
	free(err);
	CHECK_EQ_U64(count_entries(), 1); /* the directory, no PATH.tmp.PID */

	/* a missing directory: nothing can be created */
	path_in_dir(path, sizeof(path), "no/such/file");
	capture_stderr_begin();
	CHECK(write_file_atomic(path, "x", 1) == -1);
	err = capture_stderr_end();
	CHECK(strstr(err, "cannot create ") != NULL);
	CHECK(strstr(err, "no/such/file.tmp.") != NULL);
	CHECK(strstr(err, ": No such file or directory\n") != NULL);
	free(err);
	CHECK_EQ_U64(count_entries(), 1);
	remove_dir();
}

TEST(test_dash_is_stdout)
{
	char cwd[4096];

	make_dir();
	CHECK(getcwd(cwd, sizeof(cwd)) != NULL);
	CHECK(!chdir(dir));
	CHECK(!write_output("-", "", 0));
	CHECK(!write_output(NULL, "", 0));
	CHECK_EQ_U64(count_entries(), 0); /* no file named "-" */
	CHECK(!chdir(cwd));
	remove_dir();
}

UNIT_MAIN()
