// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Whole-host mode (--comm/--exe): the matches traced now and those refused
 * at --max-targets, and the scan at start that attaches to the matching
 * processes already running. A match found later arrives at its exec as an
 * event (events.c: target_matched).
 */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <bpf/libbpf.h>

#include "daemon/daemon.h"
#include "daemon/watch.h"
#include "daemon/targets.h"
#include "daemon/attach/detacher.h"
#include "daemon/proc/cgpath.h"
#include "daemon/proc/linkmap.h"
#include "daemon/proc/process.h"
#include "daemon/proc/ptstop.h"
#include "daemon/symbols/pystacks.h"
#include "daemon/symbols/symbolize.h"
#include "daemon/unwind/unwind.h"
#include "common/util.h"
#include "memtrace.skel.h"

#include "daemon/matches.h"

int targets_matched_now(const struct daemon *d)
{
	int n = 0;

	for (int i = 0; i < d->ntargets; i++)
		n += d->targets[i]->matched && lc_traced(d->targets[i]->phase);
	return n;
}

void target_over_limit(struct daemon *d, int pid)
{
	(void)pid; /* logged with the BPF side's on the next tick */
	d->matches_over_limit++;
}

uint64_t targets_over_limit(const struct daemon *d)
{
	return d->matches_over_limit + d->skel->bss->matches_over_limit;
}

void targets_log_over_limit(struct daemon *d, uint64_t now)
{
	uint64_t total;

	if (!d->set.match_what)
		return;
	total = targets_over_limit(d);
	if (total == d->over_limit_logged || now < d->over_limit_log_ns)
		return;
	log_msg("%llu more matching processes not traced: %d traced already (--max-targets); "
		"%llu in all (matches_over_limit)",
		(unsigned long long)(total - d->over_limit_logged), d->set.max_targets,
		(unsigned long long)total);
	d->over_limit_logged = total;
	d->over_limit_log_ns = now + 1000000000ull; /* at most one line a second */
}

/* Does pid run the program --comm/--exe names, or is it in --cgroup's
 * cgroup (cg)? exe_st: --exe's file. */
static int process_matches(int pid, const char *comm, const struct stat *exe_st,
			   const struct cgmatch *cg)
{
	char path[64], name[32] = "";
	struct stat st;
	FILE *f;

	if (cg)
		return cgmatch_has_pid(cg, pid);
	if (comm) {
		snprintf(path, sizeof(path), "/proc/%d/comm", pid);
		f = fopen(path, "re");
		if (!f)
			return 0;
		if (!fgets(name, sizeof(name), f))
			name[0] = 0;
		fclose(f);
		name[strcspn(name, "\n")] = 0;
		return !strcmp(name, comm);
	}
	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	return !stat(path, &st) && st.st_dev == exe_st->st_dev && st.st_ino == exe_st->st_ino;
}

/* The processes running now that match, in /proc's order; *n of them. */
static int *list_matching(const char *comm, const struct stat *exe_st, const struct cgmatch *cg,
			  int *n)
{
	struct dirent *de;
	int *pids = NULL, cap = 0;
	DIR *dir = opendir("/proc");

	*n = 0;
	if (!dir) {
		log_msg("cannot read /proc: %s", strerror(errno));
		return NULL;
	}
	while ((de = readdir(dir))) {
		int pid = atoi(de->d_name);

		if (pid <= 0 || pid == getpid() || !process_matches(pid, comm, exe_st, cg))
			continue;
		if (*n == cap) {
			cap = cap ? 2 * cap : 64;
			pids = xrealloc(pids, (size_t)cap * sizeof(*pids));
		}
		pids[(*n)++] = pid;
	}
	closedir(dir);
	return pids;
}

int matches_cgroup_start(struct daemon *d, struct cgmatch *m, const char *what, char *err,
			 size_t errlen)
{
	struct memtrace_bpf *skel = d->skel;
	int n;

	if (d->set.match_what) {
		snprintf(err, errlen, "this daemon traces %s already: one match a daemon",
			 d->set.match_what);
		free(m);
		return -1;
	}
	if (!skel->rodata->cfg.hold_exec) {
		snprintf(err, errlen,
			 "a cgroup match needs CAP_KILL: a process stopped at its exec "
			 "could not be continued");
		free(m);
		return -1;
	}
	if (!skel->links.on_cgroup_move &&
	    !(skel->links.on_cgroup_move = bpf_program__attach(skel->progs.on_cgroup_move))) {
		snprintf(err, errlen, "cannot attach to the cgroup_attach_task raw tracepoint: %s",
			 strerror(errno));
		free(m);
		return -1;
	}
	d->set.match_cgroup = m;
	d->set.match_what = xstrdup(what);
	/* the level before the id: the programs read the id first */
	skel->bss->match_cglevel = m->level;
	__atomic_store_n(&skel->bss->match_cgid, m->id, __ATOMIC_RELEASE);
	/* matches stopped since come first; the forks of those attached come as events */
	ingest_drain(&d->ingest);
	n = attach_matching(d, NULL, NULL, 0);
	ingest_drain(&d->ingest);
	n += attach_matching(d, NULL, NULL, 1);
	log_msg("cgroup %s%s (id %llu): %d processes traced now; new ones as they start there, as "
		"a traced one forks them, or as they are moved in",
		m->mount, strcmp(m->path, "/") ? m->path : "", (unsigned long long)m->id, n);
	return 0;
}

int attach_matching(struct daemon *d, const char *comm, const char *exe, int last)
{
	/* refused by the first pass: the second does not count them again */
	static int *refused, nrefused;
	struct stat exe_st = {0};
	struct mt_target_watch w;
	int n, *pids, attached = 0;

	if (exe && stat(exe, &exe_st)) {
		log_msg("--exe %s: %s", exe, strerror(errno));
		return 0;
	}
	/* listed before any is attached: none of them runs copies of probes
	 * placed by this pass */
	pids = list_matching(comm, &exe_st, d->set.match_cgroup, &n);
	for (int k = 0; k < n; k++) {
		char err[512];
		int pid = pids[k], i, rc, known = 0;

		for (i = 0; i < d->ntargets; i++)
			known |= d->targets[i]->pid == pid && lc_traced(d->targets[i]->phase);
		/* in the map: a match stopped at its exec or a traced parent's child
		 * (its event comes through the ring buffer), or a process that runs
		 * copies of a match's probes untraced (probes of its own would count
		 * its calls twice) */
		if (known || !probes_watch_get(d->skel, pid, &w))
			continue;
		if (!process_matches(pid, comm, &exe_st, d->set.match_cgroup) ||
		    process_check_pid(pid))
			continue; /* it executed another program, or exited, meanwhile */
		if (targets_matched_now(d) >= d->set.max_targets) {
			for (i = 0; i < nrefused && refused[i] != pid; i++)
				;
			if (i < nrefused)
				continue;
			target_over_limit(d, pid);
			refused = xrealloc(refused, (size_t)(nrefused + 1) * sizeof(*refused));
			refused[nrefused++] = pid;
			continue;
		}
		i = target_new(d, pid);
		d->targets[i]->matched = true;
		__atomic_fetch_add(&d->skel->bss->matched, 1, __ATOMIC_RELAXED);
		rc = target_attach(d, i, err, sizeof(err));
		if (rc < 0) {
			log_msg("pid %d matches, but %s", pid, err);
			target_unmatch(d, d->targets[i]);
			target_attach_failed(d, i);
			continue;
		}
		if (rc > 0) { /* the event of that exec attaches it (events.c) */
			log_msg("pid %d executed a program while being attached: attached at that "
				"exec, by its event",
				pid);
			continue;
		}
		/* the check above came before the exec tracepoint watched it: no
		 * exec since the watch (the count is 0) and still matching means
		 * the program attached to is a match */
		if (!probes_exec_count(d->skel, pid) &&
		    !process_matches(pid, comm, &exe_st, d->set.match_cgroup)) {
			struct target_detach *h =
			    target_detach_begin(d, pid, false, err, sizeof(err));

			if (h) {
				ingest_drain(&d->ingest); /* what it did until its probes went */
				target_detach_end(d, h);
			}
			free(d->targets[i]->note);
			d->targets[i]->note = xstrdup("executed another program while being "
						      "attached: not a match");
			log_msg("pid %d executed another program while being attached: not a "
				"match, not traced",
				pid);
			continue;
		}
		attached++;
	}
	free(pids);
	if (last) {
		free(refused);
		refused = NULL;
		nrefused = 0;
	}
	return attached;
}
