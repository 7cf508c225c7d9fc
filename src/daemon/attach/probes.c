// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * BPF object lifetime and uprobe attachment (see probes.h). One entry and one
 * return program serve every allocator function; the function is passed as
 * the BPF cookie of each attachment.
 */
#include "daemon/attach/probes.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "memtrace.skel.h"
#include "daemon/attach/probesite.h"
#include "daemon/attach/verifier.h"
#include "common/util.h"

/* Is prog one of the walker stages, and which walker's? -1: not a walker. */
static int walker_of(const struct bpf_program *prog)
{
	static const char *const names[] = {
	    [MT_WALK_FP] = "walk_fp",
	    [MT_WALK_KERNEL] = "walk_kernel",
	    [MT_WALK_DWARF] = "walk_dwarf",
	    [MT_WALK_CALLER] = "walk_caller",
	};
	const char *name = bpf_program__name(prog);

	for (size_t w = 0; w < ARRAY_SIZE(names); w++)
		if (names[w] && !strncmp(name, names[w], strlen(names[w])) &&
		    (name[strlen(names[w])] == 0 || name[strlen(names[w])] == '_'))
			return (int)w;
	return -1;
}

#ifdef MEMTRACE_TEST_HOOKS
/*
 * Test builds only (make's $(O)/tests/memtraced-hooks, never the daemon
 * installed): MEMTRACE_TEST_REFUSE=walk_dwarf,walk_fp makes the verifier
 * refuse those programs (and their _tp copies) for real: loaded as
 * sleepable, which a uprobe or tracepoint program cannot be.
 */
static int test_refuse(struct memtrace_bpf *skel)
{
	const char *list = getenv("MEMTRACE_TEST_REFUSE");
	struct bpf_program *prog;

	bpf_object__for_each_program(prog, skel->obj)
	{
		const char *name = bpf_program__name(prog);
		size_t n = strlen(name) > 3 && !strcmp(name + strlen(name) - 3, "_tp")
			       ? strlen(name) - 3
			       : strlen(name);

		for (const char *p = list; p && *p;
		     p += strcspn(p, ",") + (p[strcspn(p, ",")] != 0))
			if (strcspn(p, ",") == n && !strncmp(p, name, n) &&
			    bpf_program__set_flags(prog,
						   bpf_program__flags(prog) | BPF_F_SLEEPABLE))
				return -1;
	}
	return 0;
}
#else
static int test_refuse(struct memtrace_bpf *skel)
{
	return 0;
}
#endif

int probes_configure(struct memtrace_bpf *skel, const struct bpf_options *o)
{
	struct bpf_program *prog;

	skel->rodata->cfg.stack_depth = o->stack_depth;
	skel->rodata->cfg.stack_walker = o->stack_walker;
	/* wake the consumer when a quarter of the buffer is queued */
	skel->rodata->cfg.wakeup_bytes = o->ring_buffer_bytes / 4;
	if (o->match_comm)
		strncpy(skel->rodata->cfg.match_comm, o->match_comm,
			sizeof(skel->rodata->cfg.match_comm) - 1);
	skel->rodata->cfg.match_dev = o->match_dev;
	skel->rodata->cfg.match_ino = o->match_ino;
	skel->rodata->cfg.match_follow = o->match_follow;
	skel->rodata->cfg.max_matches = o->max_matches;
	skel->rodata->cfg.hold_exec = o->hold_exec;
	/* known stacks as ids (docs/design.md), or every stack in full */
	skel->rodata->cfg.stack_ids = !o->stack_ids_off;
#ifdef MEMTRACE_TEST_HOOKS
	/* tests only: MEMTRACE_INFLIGHT_SLOTS=N (a power of two) makes threads
	 * share N slots, so that calls take the task storage path */
	if (getenv("MEMTRACE_INFLIGHT_SLOTS")) {
		unsigned long n = strtoul(getenv("MEMTRACE_INFLIGHT_SLOTS"), NULL, 10);

		if (n && n <= MT_INFLIGHT_SLOTS && !(n & (n - 1)))
			skel->rodata->cfg.inflight_mask = (uint32_t)n - 1;
	}
#endif
	/* only the chosen walker's stages are loaded (and verified), and the
	 * frame-pointer walk the DWARF walker takes where it has no tables */
	bpf_object__for_each_program(prog, skel->obj)
	{
		int w = walker_of(prog);

		if (w >= 0 && bpf_program__set_autoload(
				  prog, (uint32_t)w == o->stack_walker ||
					    (w == MT_WALK_FP && o->stack_walker == MT_WALK_DWARF)))
			return -1;
	}
	if (test_refuse(skel))
		return -1;
	return bpf_map__set_max_entries(skel->maps.events, (uint32_t)o->ring_buffer_bytes);
}

/*
 * The stages an allocation's event goes through after its probe (tail
 * calls: bpf/memtrace.bpf.c): each program array's slots, filled from the
 * loaded programs by name. 0, or -errno.
 */
int probes_fill_stages(struct memtrace_bpf *skel)
{
	struct bpf_program *prog;

	bpf_object__for_each_program(prog, skel->obj)
	{
		const char *name = bpf_program__name(prog);
		int w = walker_of(prog),
		    tp = strlen(name) > 3 && !strcmp(name + strlen(name) - 3, "_tp");
		struct bpf_map *arr = tp ? skel->maps.stages_tp : skel->maps.stages;
		uint32_t slot;
		int fd;

		if (!bpf_program__autoload(prog))
			continue;
		fd = bpf_program__fd(prog);
		if (w == MT_WALK_FP) {
			/* the DWARF walker's, and the walker when chosen */
			slot = MT_STAGE_WALK_FP;
			if (fd < 0 || bpf_map_update_elem(bpf_map__fd(arr), &slot, &fd, BPF_ANY))
				return -errno;
		}
		if ((uint32_t)w == skel->rodata->cfg.stack_walker)
			slot = MT_STAGE_WALK;
		else if (w >= 0)
			continue;
		else if (!strncmp(name, "stage_python", 12))
			slot = MT_STAGE_PYTHON;
		else if (!strncmp(name, "stage_emit", 10))
			slot = MT_STAGE_EMIT;
		else
			continue;
		if (fd < 0 || bpf_map_update_elem(bpf_map__fd(arr), &slot, &fd, BPF_ANY))
			return -errno;
	}
	return 0;
}

/*
 * The object with o's walker, loaded, its stages filled. NULL: *refused
 * holds the program the verifier refused, if one was (refused->program
 * empty: none was; err says why).
 */
static struct memtrace_bpf *load_walker(const struct bpf_options *o, struct walker_refusal *refused,
					char *err, size_t errlen)
{
	struct memtrace_bpf *skel;
	struct verifier_logs vl = {0};
	int rc, bad, configured;

	memset(refused, 0, sizeof(*refused));
	refused->walker = (int)o->stack_walker;
	skel = memtrace_bpf__open();
	if (!skel) {
		snprintf(err, errlen, "cannot open the BPF object: %s", strerror(errno));
		return NULL;
	}
	/* -1 from these two: libbpf refused a setting */
	configured = !probes_configure(skel, o) && !verifier_logs_set(skel->obj, &vl);
	rc = configured ? memtrace_bpf__load(skel) : -EINVAL;
	if (rc && configured) {
		bad = verifier_logs_refused(&vl, refused->line, sizeof(refused->line));
		if (bad >= 0)
			snprintf(refused->program, sizeof(refused->program), "%s",
				 vl.progs[bad].name);
	}
	verifier_logs_free(&vl);
	if (!rc)
		rc = probes_fill_stages(skel);
	if (rc) {
		snprintf(err, errlen, "cannot load the BPF programs: %s%s", strerror(-rc),
			 rc == -EPERM ? " (memtraced needs root: CAP_BPF and CAP_PERFMON)" : "");
		memtrace_bpf__destroy(skel);
		return NULL;
	}
	/* OOM kills marked (oom:mark_victim) where the kernel has the tracepoint */
	skel->links.on_oom_victim = bpf_program__attach(skel->progs.on_oom_victim);
	if (!skel->links.on_oom_victim)
		log_msg("no oom:mark_victim tracepoint (%s): OOM kills show as plain exits",
			strerror(errno));
	return skel;
}

uint64_t probes_oom_lost(const struct memtrace_bpf *skel)
{
	return skel->bss->oom_lost;
}

struct memtrace_bpf *probes_load(const struct bpf_options *o, struct probes_loaded *out, char *err,
				 size_t errlen)
{
	struct bpf_options ow = *o;
	struct memtrace_bpf *skel;

	verifier_quiet_libbpf();
	memset(out, 0, sizeof(*out));
	out->walker = -1;
	for (;;) {
		struct walker_refusal *r = &out->refused[out->nrefused];
		int next;

		skel = load_walker(&ow, r, err, errlen);
		if (skel)
			break;
		if (!r->program[0])
			return NULL; /* not the verifier: no other walker would load */
		out->nrefused++;
		next = walker_next((int)ow.stack_walker);
		if (next < 0 || out->nrefused == PROBES_MAX_REFUSED)
			return NULL;
		ow.stack_walker = (uint32_t)next;
	}
	out->walker = (int)ow.stack_walker;
	/* The skeleton owns the links: memtrace_bpf__destroy() detaches them. */
	/* an exec and a fork have two programs each (bpf/control.bpf.h: first_hook) */
	skel->links.on_exec = bpf_program__attach(skel->progs.on_exec);
	if (skel->links.on_exec)
		skel->links.on_exec2 = bpf_program__attach(skel->progs.on_exec2);
	if (skel->links.on_exec2)
		skel->links.on_fork = bpf_program__attach(skel->progs.on_fork);
	if (skel->links.on_fork)
		skel->links.on_newtask = bpf_program__attach(skel->progs.on_newtask);
	if (skel->links.on_newtask)
		skel->links.on_process_exit = bpf_program__attach(skel->progs.on_process_exit);
	if (!skel->links.on_exec || !skel->links.on_exec2 || !skel->links.on_fork ||
	    !skel->links.on_newtask || !skel->links.on_process_exit) {
		snprintf(err, errlen, "cannot attach to the %s raw tracepoint: %s",
			 !skel->links.on_exec || !skel->links.on_exec2 ? "sched_process_exec"
			 : !skel->links.on_fork			       ? "sched_process_fork"
			 : !skel->links.on_newtask		       ? "task_newtask"
								       : "sched_process_exit",
			 strerror(errno));
		memtrace_bpf__destroy(skel);
		return NULL;
	}
	return skel;
}

static void bench_unload(void); /* make bench's programs, in the test build */

void probes_unload(struct memtrace_bpf *skel)
{
	bench_unload();
	memtrace_bpf__destroy(skel);
}

int probes_ringbuf_fd(struct memtrace_bpf *skel)
{
	return bpf_map__fd(skel->maps.events);
}

int probes_read_lost(struct memtrace_bpf *skel, uint64_t *lost, int nslots)
{
	int ncpus = libbpf_num_possible_cpus(), slot, cpu;
	uint64_t *values;

	if (ncpus <= 0)
		return -1;
	values = xcalloc((size_t)ncpus, sizeof(*values));
	for (slot = 0; slot < nslots; slot++) {
		uint32_t key = (uint32_t)slot;

		lost[slot] = 0;
		if (bpf_map_lookup_elem(bpf_map__fd(skel->maps.lost), &key, values))
			continue;
		for (cpu = 0; cpu < ncpus; cpu++)
			lost[slot] += values[cpu];
	}
	free(values);
	return 0;
}

uint64_t probes_runs_skipped(struct memtrace_bpf *skel,
			     void (*each)(const char *name, uint64_t misses, int i, void *arg),
			     void *arg)
{
	struct bpf_program *p;
	uint64_t total = 0;
	int i = 0;

	bpf_object__for_each_program(p, skel->obj)
	{
		struct bpf_prog_info info;
		uint32_t len = sizeof(info);
		int fd = bpf_program__fd(p);

		memset(&info, 0, sizeof(info));
		if (fd >= 0 && !bpf_obj_get_info_by_fd(fd, &info, &len)) {
			total += info.recursion_misses;
			if (each)
				each(bpf_program__name(p), info.recursion_misses, i, arg);
		}
		i++;
	}
	return total;
}

enum { PROG_FREE, PROG_RETURN, PROG_OUTER_FREE, PROG_ENTRY, PROG_PYALLOC_SET, PROG_COUNT };

/*
 * --follow-forks. A uprobe made through perf's uprobe PMU (what libbpf
 * does) is not inherited by children: the copy would need the path from
 * the daemon's memory. A uprobe defined in tracefs and opened as a
 * tracepoint perf event with attr.inherit is: the kernel copies the event
 * into each child in copy_process() and keeps the breakpoints dup_mmap()
 * copied, so a child is traced from its first instruction.
 *
 * The BPF program is not attached to that inherited event but to a second,
 * not inherited, perf event of the same tracefs event on the same process
 * (the anchor). A tracefs event runs the programs of its one program array
 * on every hit, whichever perf event put them there, so the children's
 * hits run it too. Attached to the inherited event, each child's copy
 * would hold the program as well, and freeing the copy when that child
 * exits removes the program from the shared array
 * (perf_event_free_bpf_prog): measured here, every followed process went
 * untraced once the first one exited.
 *
 * Events are named memtrace_<daemon pid>/p<n> and removed at detach; a
 * daemon killed leaves them behind unused, and the next one removes them.
 */
static const char *tracefs_dir(void)
{
	static const char *const dirs[] = {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"};
	static char found[64];
	char path[128];

	if (found[0])
		return found;
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
			snprintf(path, sizeof(path), "%s/uprobe_events", dirs[i]);
			if (access(path, W_OK) == 0) {
				snprintf(found, sizeof(found), "%s", dirs[i]);
				return found;
			}
		}
		/* not mounted: mount it where the kernel provides the mount point */
		if (mount("nodev", dirs[0], "tracefs", 0, NULL) && errno != EBUSY)
			break;
	}
	return NULL;
}

static int tracefs_write(const char *line)
{
	char path[128];
	int fd, rc = 0;

	snprintf(path, sizeof(path), "%s/uprobe_events", tracefs_dir());
	fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, line, strlen(line)) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

static void tracefs_remove(uint32_t n)
{
	char line[64];

	snprintf(line, sizeof(line), "-:memtrace_%d/p%u\n", (int)getpid(), n);
	tracefs_write(line);
}

/* Close the inherited perf events and remove the tracefs event (the anchor
 * went with its link before). */
static void tracefs_release(struct tracefs_probe *t)
{
	if (t->inherit_fd)
		close(t->inherit_fd - 1);
	for (int i = 0; i < t->nretired; i++)
		close(t->retired[i]);
	free(t->retired);
	if (t->id)
		tracefs_remove(t->id);
	memset(t, 0, sizeof(*t));
}

/*
 * The perf event children inherit: a tracepoint event of the tracefs uprobe
 * on pid. With match, the copies go at each child's exec (remove_on_exec):
 * a --comm match's child that executes another program runs none of ours
 * from then on. (It also leaves pid itself at pid's exec, the anchor does
 * not: probes_reinherit.) fd, or -1 with errno.
 */
static int open_inherited(uint64_t config, int pid, int match)
{
	struct perf_event_attr attr = {0};

	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_TRACEPOINT;
	attr.config = config;
	attr.sample_period = 1;
	attr.inherit = 1;
	attr.remove_on_exec = (unsigned)!!match;
	return (int)syscall(SYS_perf_event_open, &attr, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

/* Remove the events of daemons that are gone (killed: never cleaned up). */
static void tracefs_remove_stale(void)
{
	char path[128], line[4096];
	FILE *f;

	if (!tracefs_dir())
		return;
	snprintf(path, sizeof(path), "%s/uprobe_events", tracefs_dir());
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		int pid;
		char name[64], cmd[80];

		if (sscanf(line, "%*c:memtrace_%d/%63s", &pid, name) != 2 || pid == getpid())
			continue;
		if (kill(pid, 0) == 0 || errno != ESRCH)
			continue; /* that daemon is alive */
		snprintf(cmd, sizeof(cmd), "-:memtrace_%d/%s\n", pid, name);
		tracefs_write(cmd);
	}
	fclose(f);
}

static struct bpf_link *attach_inherited(struct bpf_program *prog, int pid, const char *path,
					 uint64_t offset, int retprobe, uint64_t cookie, int match,
					 struct tracefs_probe *out)
{
	LIBBPF_OPTS(bpf_perf_event_opts, opts, .bpf_cookie = cookie);
	static uint32_t next;
	struct perf_event_attr attr = {0};
	char line[PATH_MAX + 128], idpath[160], idtext[32];
	struct bpf_link *link;
	uint32_t n = ++next;
	int fd, rc, pfd, ifd;
	ssize_t len;

	if (!tracefs_dir()) {
		errno = ENOTSUP;
		return NULL;
	}
	if (n == 1)
		tracefs_remove_stale();
	if (strpbrk(path, " \t\n")) {
		errno = EINVAL; /* tracefs splits its lines on blanks */
		return NULL;
	}
	snprintf(line, sizeof(line), "%c:memtrace_%d/p%u %s:0x%llx\n", retprobe ? 'r' : 'p',
		 (int)getpid(), n, path, (unsigned long long)offset);
	rc = tracefs_write(line);
	if (rc) {
		errno = -rc;
		return NULL;
	}
	snprintf(idpath, sizeof(idpath), "%s/events/memtrace_%d/p%u/id", tracefs_dir(),
		 (int)getpid(), n);
	fd = open(idpath, O_RDONLY | O_CLOEXEC);
	len = fd < 0 ? -1 : read(fd, idtext, sizeof(idtext) - 1);
	rc = errno;
	if (fd >= 0)
		close(fd);
	if (len <= 0) {
		tracefs_remove(n);
		errno = len < 0 ? rc : EIO;
		return NULL;
	}
	idtext[len] = 0;
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_TRACEPOINT;
	attr.config = strtoull(idtext, NULL, 10);
	attr.sample_period = 1;
	ifd = open_inherited(attr.config, pid, match);
	/* the anchor: not inherited, on pid across its execs */
	pfd = ifd < 0 ? -1
		      : (int)syscall(SYS_perf_event_open, &attr, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	link = pfd < 0 ? NULL : bpf_program__attach_perf_event_opts(prog, pfd, &opts);
	if (!link) {
		rc = errno;
		if (pfd >= 0)
			close(pfd);
		if (ifd >= 0)
			close(ifd);
		tracefs_remove(n);
		errno = rc;
		return NULL;
	}
	out->id = n;
	out->inherit_fd = ifd + 1;
	out->config = attr.config;
	out->match = match;
	return link;
}

int probes_reinherit(struct target_probes *tp, int pid)
{
	int rc = 0;

	for (int i = 0; i < tp->nlinks; i++) {
		struct tracefs_probe *t = &tp->tracefs[i];
		int *more, fd;

		if (!tp->links[i] || !t->inherit_fd || !t->match)
			continue;
		fd = open_inherited(t->config, pid, 1);
		more =
		    fd < 0 ? NULL : realloc(t->retired, (size_t)(t->nretired + 1) * sizeof(*more));
		if (!more) {
			rc = -errno;
			if (fd >= 0)
				close(fd);
			continue;
		}
		t->retired = more;
		t->retired[t->nretired++] = t->inherit_fd - 1;
		t->inherit_fd = fd + 1;
	}
	return rc;
}

#ifdef MEMTRACE_TEST_HOOKS
#include "bench.skel.h"

/*
 * make bench's baselines on the same probes (test build only): with
 * MEMTRACE_BENCH_PROGRAMS=empty (the trap floor: programs that do nothing;
 * MEMTRACE_BENCH_EMPTY_PROGRAMS=1 says the same) or =minimal (a minimal ring
 * buffer tracer: a record per call, no stack), the programs of bpf/bench.bpf.c
 * go on the probes instead of ours. Their object is loaded once, beside
 * skel, with skel's ring buffer and lost counters as its own.
 */
static struct bench_bpf *bench_skel;

static int bench_programs(struct memtrace_bpf *skel, struct bpf_program **progs)
{
	const char *env = getenv("MEMTRACE_BENCH_PROGRAMS");
	const char *empty = getenv("MEMTRACE_BENCH_EMPTY_PROGRAMS");
	int minimal = env && !strcmp(env, "minimal");

	if (!minimal && !(env && !strcmp(env, "empty")) && !(empty && strcmp(empty, "0") != 0))
		return 0; /* ours */
	if (!bench_skel) {
		struct bench_bpf *b = bench_bpf__open();
		int rc = b ? 0 : -errno;

		if (!rc)
			rc = bpf_map__reuse_fd(b->maps.events, bpf_map__fd(skel->maps.events));
		if (!rc)
			rc = bpf_map__reuse_fd(b->maps.lost, bpf_map__fd(skel->maps.lost));
		if (!rc)
			rc = bench_bpf__load(b);
		if (rc) {
			bench_bpf__destroy(b);
			errno = rc < 0 ? -rc : EINVAL;
			return -1;
		}
		bench_skel = b;
	}
	if (minimal) {
		progs[PROG_FREE] = progs[PROG_OUTER_FREE] = bench_skel->progs.minimal_free;
		progs[PROG_ENTRY] = bench_skel->progs.minimal_enter;
		progs[PROG_RETURN] = bench_skel->progs.minimal_return;
	} else {
		progs[PROG_FREE] = progs[PROG_OUTER_FREE] = progs[PROG_ENTRY] =
		    bench_skel->progs.empty_enter;
		progs[PROG_RETURN] = bench_skel->progs.empty_return;
	}
	return 0;
}

static void bench_unload(void)
{
	bench_bpf__destroy(bench_skel);
	bench_skel = NULL;
}
#else
static int bench_programs(struct memtrace_bpf *skel, struct bpf_program **progs)
{
	return 0;
}

static void bench_unload(void)
{
}
#endif

static int attach_one(struct memtrace_bpf *skel, int which, int pid, const char *path,
		      uint64_t offset, int func, uint64_t cookie, struct target_probes *tp,
		      struct target_probes *old, const struct target_probes *inherited, int follow)
{
	static const int retprobe[PROG_COUNT] = {[PROG_RETURN] = 1};
	struct bpf_program *progs[PROG_COUNT] = {
	    [PROG_FREE] = skel->progs.free_enter,
	    [PROG_RETURN] = skel->progs.alloc_return,
	    [PROG_OUTER_FREE] = skel->progs.outer_free_enter,
	    [PROG_ENTRY] = skel->progs.alloc_enter,
	    [PROG_PYALLOC_SET] = skel->progs.pyalloc_set,
	};
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .retprobe = retprobe[which], .bpf_cookie = cookie);

	struct probe_key key = {.offset = offset, .func = func, .prog = which};
	struct bpf_link *link;
	struct stat st;

	if (bench_programs(skel, progs))
		return -errno;
	if (stat(path, &st) == 0) {
		key.dev = st.st_dev;
		key.ino = st.st_ino;
	}
	for (int i = 0; old && key.ino && i < old->nlinks; i++) {
		if (old->links[i] && !memcmp(&old->keys[i], &key, sizeof(key))) {
			tp->keys[tp->nlinks] = key;
			tp->tracefs[tp->nlinks] = old->tracefs[i];
			tp->links[tp->nlinks++] = old->links[i];
			old->links[i] = NULL;
			memset(&old->tracefs[i], 0, sizeof(old->tracefs[i]));
			return 0;
		}
	}
	/* a forked child's copy of its parent's probe covers it already */
	for (int i = 0; inherited && key.ino && i < inherited->nlinks; i++) {
		if (inherited->links[i] && !memcmp(&inherited->keys[i], &key, sizeof(key)))
			return 0;
	}
	memset(&tp->tracefs[tp->nlinks], 0, sizeof(tp->tracefs[tp->nlinks]));
	if (follow)
		link = attach_inherited(progs[which], pid, path, offset, retprobe[which], cookie,
					follow == PROBES_INHERIT_MATCH, &tp->tracefs[tp->nlinks]);
	else
		link = bpf_program__attach_uprobe_opts(progs[which], pid, path, offset, &opts);
	if (!link)
		return -errno;
	tp->keys[tp->nlinks] = key;
	tp->links[tp->nlinks++] = link;
	return 0;
}

/* Put the links tp took from old back where they were; detach the rest. */
static void undo_attach(struct target_probes *tp, struct target_probes *old)
{
	for (int i = tp->nlinks - 1; i >= 0; i--) {
		int k;

		for (k = 0; old && k < old->nlinks; k++) {
			if (!old->links[k] &&
			    !memcmp(&old->keys[k], &tp->keys[i], sizeof(tp->keys[i])))
				break;
		}
		if (old && k < old->nlinks) {
			old->links[k] = tp->links[i];
			old->tracefs[k] = tp->tracefs[i];
		} else {
			bpf_link__destroy(tp->links[i]);
			tracefs_release(&tp->tracefs[i]);
		}
	}
	tp->nlinks = 0;
}

int probes_attach(struct memtrace_bpf *skel, int pid, const struct allocator *a, int follow,
		  struct target_probes *tp, char *err, size_t errlen)
{
	return probes_attach_keeping(skel, pid, a, follow, tp, NULL, NULL, err, errlen);
}

int probes_attach_keeping(struct memtrace_bpf *skel, int pid, const struct allocator *a, int follow,
			  struct target_probes *tp, struct target_probes *old,
			  const struct target_probes *inherited, char *err, size_t errlen)
{
	int pass, i, rc = 0;

	memset(tp, 0, sizeof(*tp));
	/* pass 0: free; 1: return probes; 2: entry probes */
	for (pass = 0; pass < 3 && !rc; pass++) {
		for (i = 0; i < a->nprobes && !rc; i++) {
			const struct alloc_probe *p = &a->probes[i];
			const char *path = allocator_probe_open_path(a, p);
			/* entry and return probes share the place (placement.c keeps the
			 * stack pointer the entry's where there is a return probe) */
			uint64_t at = p->offset + p->place.offset;
			uint64_t cookie = probesite_cookie(p->func, &p->place);
			int is_free = p->func == MT_FN_FREE || p->func == MT_FN_DALLOCX;
			/* PyObject_Free and an interposer's operator delete emit
			 * at entry like free, and have a return probe so that a
			 * free they call is not counted again */
			int is_outer_free =
			    p->func == MT_FN_PYMALLOC_FREE || p->func == MT_FN_DELETE;

			if (pass == 0 && is_free)
				rc = attach_one(skel, PROG_FREE, pid, path, at, p->func, cookie, tp,
						old, inherited, follow);
			else if (pass == 1 && !is_free)
				rc = attach_one(skel, PROG_RETURN, pid, path, at, p->func, cookie,
						tp, old, inherited, follow);
			else if (pass == 2 && is_outer_free)
				rc = attach_one(skel, PROG_OUTER_FREE, pid, path, at, p->func,
						cookie, tp, old, inherited, follow);
			else if (pass == 2 && !is_free)
				rc = attach_one(skel, PROG_ENTRY, pid, path, at, p->func, cookie,
						tp, old, inherited, follow);
			if (rc)
				snprintf(err, errlen, "cannot attach a uprobe to %s in %s: %s",
					 allocator_func_name(p->func), allocator_probe_path(a, p),
					 strerror(-rc));
		}
	}
	/* CPython's allocator setters, while its frees are probed where they
	 * dispatch to (pydispatch.c) */
	for (i = 0; i < a->npy_setters && !rc; i++) {
		rc = attach_one(skel, PROG_PYALLOC_SET, pid, a->obj[ALLOC_OBJ_PYTHON].open_path,
				a->py_setters[i], MT_FN_COUNT, a->py_setter_domain[i], tp, old,
				inherited, follow);
		if (rc)
			snprintf(err, errlen,
				 "cannot attach a uprobe to an allocator setter in %s: %s",
				 a->obj[ALLOC_OBJ_PYTHON].path, strerror(-rc));
	}
	if (rc)
		undo_attach(tp, old);
	return rc ? -1 : 0;
}

int probes_count(const struct target_probes *tp)
{
	int n = 0;

	for (int i = 0; tp && i < tp->nlinks; i++)
		n += tp->links[i] != NULL;
	return n;
}

void probes_unwatch(struct memtrace_bpf *skel, int pid)
{
	uint32_t key = (uint32_t)pid;

	bpf_map_delete_elem(bpf_map__fd(skel->maps.targets), &key);
}

int probes_watch(struct memtrace_bpf *skel, int pid, int follow, int matched, int fresh)
{
	struct mt_target_watch w = {.follow = (uint32_t) !!follow, .matched = (uint16_t) !!matched};
	uint32_t key = (uint32_t)pid;

	if (bpf_map_update_elem(bpf_map__fd(skel->maps.targets), &key, &w,
				fresh ? BPF_NOEXIST : BPF_ANY))
		return -errno;
	return 0;
}

int probes_untraced(struct memtrace_bpf *skel, int pid, int why)
{
	struct mt_target_watch w = {.follow = 1, .untraced = (uint16_t)why};
	uint32_t key = (uint32_t)pid;

	/* first: the probes look once it is set (bpf/memtrace.bpf.c, not_traced) */
	skel->bss->untraced_probed = 1;
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.targets), &key, &w, BPF_ANY))
		return -errno;
	return 0;
}

int probes_watch_get(struct memtrace_bpf *skel, int pid, struct mt_target_watch *w)
{
	uint32_t key = (uint32_t)pid;

	return bpf_map_lookup_elem(bpf_map__fd(skel->maps.targets), &key, w) ? -1 : 0;
}

uint64_t probes_exec_count(struct memtrace_bpf *skel, int pid)
{
	struct mt_target_watch w;
	uint32_t key = (uint32_t)pid;

	if (bpf_map_lookup_elem(bpf_map__fd(skel->maps.targets), &key, &w))
		return 0;
	return w.execs;
}

void probes_detach(struct target_probes *tp)
{
	int i;

	if (!tp)
		return;
	/* entry probes first (attached last), so no entry outlives its return */
	for (i = tp->nlinks - 1; i >= 0; i--) {
		bpf_link__destroy(tp->links[i]); /* NULL: moved, nothing to do */
		if (tp->links[i])		 /* the anchor is closed now */
			tracefs_release(&tp->tracefs[i]);
	}
	tp->nlinks = 0;
}

struct bpf_link *probes_attach_ldso(struct memtrace_bpf *skel, int pid, const char *path,
				    uint64_t offset)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts);

	return bpf_program__attach_uprobe_opts(skel->progs.ldso_state, pid, path, offset, &opts);
}

int probes_mmap_enable(struct memtrace_bpf *skel, int pid)
{
	uint32_t key = (uint32_t)pid;
	uint8_t on = 1;

	/* The skeleton owns the links: memtrace_bpf__destroy() detaches them. */
	if (!skel->links.munmap_enter) {
		skel->links.munmap_enter = bpf_program__attach(skel->progs.munmap_enter);
		if (!skel->links.munmap_enter)
			return -errno;
	}
	if (!skel->links.mmap_exit) {
		skel->links.mmap_exit = bpf_program__attach(skel->progs.mmap_exit);
		if (!skel->links.mmap_exit)
			return -errno;
	}
	if (!skel->links.mmap_enter) {
		skel->links.mmap_enter = bpf_program__attach(skel->progs.mmap_enter);
		if (!skel->links.mmap_enter)
			return -errno;
	}
	if (bpf_map__update_elem(skel->maps.mmaptrace, &key, sizeof(key), &on, sizeof(on), BPF_ANY))
		return -errno;
	skel->bss->mmap_targets = 1;
	return 0;
}

void probes_mmap_disable(struct memtrace_bpf *skel, int pid)
{
	uint32_t key = (uint32_t)pid;

	bpf_map__delete_elem(skel->maps.mmaptrace, &key, sizeof(key), 0);
}
