/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The events that change what is traced rather than what is allocated: a
 * target's exec, a fork of a followed target, a --comm/--exe match, ld.so
 * done mapping (after an exec, or a dlopen for the DWARF walker), a CPython
 * installing an allocator. Each that needs the daemon before the process
 * goes on stops it (SIGSTOP, recorded in "stopped" for the keeper).
 * Included once by bpf/memtrace.bpf.c, after the maps and helpers it uses.
 */
/*
 * A target executed a new program. Its old address space is gone, and probes
 * placed for the old program must not count the new one's calls: one event,
 * ordered in the ring buffer after every event of the old program (its other
 * threads are gone by now) and before any of the new one.
 */
/* Matched targets alive now (the daemon takes exited ones off). */
volatile __s32 matched;
/* Matches left untraced here because max_matches were traced
 * (matches_over_limit, docs/metrics.md; the daemon adds its own). */
volatile __u64 matches_over_limit;

/*
 * Stop the current process (SIGSTOP) for the daemon, recorded in "stopped"
 * so that the keeper continues it if the daemon dies first; cont_current
 * undoes it when the daemon cannot be told.
 */
static __always_inline void stop_current(__u32 tgid)
{
	__u8 one = 1;

	bpf_map_update_elem(&stopped, &tgid, &one, BPF_ANY);
	bpf_send_signal(19 /* SIGSTOP */);
}

static __always_inline void cont_current(__u32 tgid)
{
	bpf_send_signal(18 /* SIGCONT */);
	bpf_map_delete_elem(&stopped, &tgid);
}

/*
 * --cgroup/--unit (or memtracectl attach --cgroup, while the daemon runs):
 * the cgroup v2 directory's id (0: none) and its level below the root. Not
 * .rodata, so that a running daemon can start a match: the daemon writes
 * the level first, then the id.
 */
volatile __u64 match_cgid;
volatile __u32 match_cglevel;

/*
 * Whole-host mode: does the program just executed match --comm or --exe?
 * Its comm is already the new program's name here.
 */
static __always_inline int exec_matches(struct linux_binprm *bprm)
{
	char comm[16];

	if (cfg.match_comm[0]) {
		bpf_get_current_comm(comm, sizeof(comm));
		for (int i = 0; i < 16; i++) {
			if (comm[i] != cfg.match_comm[i])
				return 0;
			if (!comm[i])
				break;
		}
		return 1;
	}
	if (cfg.match_ino) {
		struct inode *ino = BPF_CORE_READ(bprm, file, f_inode);

		return BPF_CORE_READ(ino, i_ino) == cfg.match_ino &&
		       BPF_CORE_READ(ino, i_sb, s_dev) == cfg.match_dev;
	}
	/* --cgroup/--unit: the cgroup v2 directory or one below it (the
	 * process's ancestor at that level is it) */
	if (match_cgid)
		return bpf_get_current_ancestor_cgroup_id(match_cglevel) == match_cgid;
	return 0;
}

/*
 * A matching program starts (whole-host mode): it becomes a watched target
 * and is stopped before its first instruction, so that the daemon can place
 * the probes before any allocation; the daemon continues it (SIGCONT) as
 * soon as they are attached. Past max_matches, it is left alone (counted).
 */
static __always_inline void exec_match(struct linux_binprm *bprm, __u32 tgid)
{
	/* its children run the same program: they are matches too (on_fork) */
	struct mt_target_watch w = {.follow = 1, .matched = 1};
	struct mt_event *ev;

	if (!exec_matches(bprm))
		return;
	/* two execs at once may both pass: the daemon checks the cap again */
	if (matched >= (__s32)cfg.max_matches) {
		__sync_fetch_and_add(&matches_over_limit, 1);
		return;
	}
	if (bpf_map_update_elem(&targets, &tgid, &w, BPF_NOEXIST)) {
		count_lost(MT_EV_MATCH);
		return;
	}
	__sync_fetch_and_add(&matched, 1);
	ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
	if (!ev) {
		/* the daemon would never hear of it: leave it alone, counted */
		bpf_map_delete_elem(&targets, &tgid);
		__sync_fetch_and_add(&matched, -1);
		count_lost(MT_EV_MATCH);
		return;
	}
	stop_current(tgid);
	__builtin_memset(ev, 0, sizeof(*ev));
	ev->kind = MT_EV_MATCH;
	ev->tgid = tgid;
	ev->tid = (__u32)bpf_get_current_pid_tgid();
	ev->stack_end = MT_STACK_NONE;
	ev->time_ns = bpf_ktime_get_ns();
	bpf_ringbuf_submit(ev, BPF_RB_FORCE_WAKEUP);
}

/* The raw tracepoint programs' array for their never-taken tail call
 * (bpf/nopriv.bpf.h): always empty. */
struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} nopriv_raw_tp SEC(".maps");

/*
 * Two hooks, one happening. Where tracepoints run preemptible (7.x: with
 * migration disabled only), the kernel skips a program on a CPU where a
 * preempted task is in the middle of that same program (its per-CPU
 * recursion guard; counted in the program's recursion_misses and nowhere
 * else). A preempted run is common: a record that wakes the daemon raises
 * an interrupt whose return preempts the task still in the program. So a
 * fork and an exec each have two programs, with two guards: the first to
 * run for it does the work and marks it here, the second finds the mark.
 * Both are skipped only when two tasks are preempted on that CPU, one in
 * each (and a second program is preempted only when the first was skipped:
 * its own runs are a lookup). Key: what happened (MT_EV_FORK or
 * MT_EV_EXEC), the process, and two numbers that tell this one from any
 * other (a fork: the child's start time; an exec: the exec count of the
 * task and the process's start time).
 */
struct mt_once_key {
	__u32 tgid;
	__u32 what;
	__u64 a, b;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 2048); /* a mark lives from one hook to the next */
	__type(key, struct mt_once_key);
	__type(value, __u8);
} once SEC(".maps");

/* 1 for the first of the two hooks to see this happening, 0 for the other. */
static __always_inline int first_hook(__u32 what, __u32 tgid, __u64 a, __u64 b)
{
	struct mt_once_key key = {.tgid = tgid, .what = what, .a = a, .b = b};
	__u8 one = 1;

	return !bpf_map_update_elem(&once, &key, &one, BPF_NOEXIST);
}

static __always_inline void exec_hook(struct bpf_raw_tracepoint_args *ctx)
{
	struct linux_binprm *bprm = (struct linux_binprm *)ctx->args[2];
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;
	struct mt_target_watch *w = bpf_map_lookup_elem(&targets, &tgid);

	inflight_drop(task, (__u32)id);
	if (!w && !cfg.match_comm[0] && !cfg.match_ino && !match_cgid)
		return; /* none of ours, and nothing to match */
	if (!first_hook(MT_EV_EXEC, tgid, BPF_CORE_READ(task, self_exec_id),
			BPF_CORE_READ(task, group_leader, start_time)))
		return; /* the other program took it */
	if (w && w->untraced == MT_UNTRACED_COPIES) {
		/* the copies of its parent's probes went at this exec (they are
		 * opened with remove_on_exec): it runs none of ours now */
		bpf_map_delete_elem(&targets, &tgid);
		w = NULL;
	}
	if (!w) {
		if (cfg.match_comm[0] || cfg.match_ino || match_cgid)
			exec_match(bprm, tgid);
		return;
	}
	if (w->untraced)
		return; /* MT_UNTRACED_OWN: not matched again while it holds probes */
	__sync_fetch_and_add(&w->execs, 1);
	/* the old program's unwind mappings: the daemon lists the new one's */
	if (!bpf_map_delete_elem(&uw_procs, &tgid))
		__sync_fetch_and_add(&uw_lists_changed, 1);
	if (w->matched && !cfg.match_follow && !exec_matches(bprm)) {
		/* it no longer runs the program matched: from here on its calls
		 * are not traced (the daemon ends its entry); not stopped */
		w->untraced = MT_UNTRACED_OWN;
		untraced_probed = 1;
		emit_small(MT_EV_EXEC, 0, 0, MT_EXEC_UNMATCHED, 0);
		return;
	}
	if (!cfg.hold_exec) {
		emit_small(MT_EV_EXEC, 0, 0, 0, 0);
		return;
	}
	/* stopped until the daemon has placed a probe on the new program's
	 * ld.so (ldso_state), so that it resolves the allocator the linker
	 * binds before any of it runs; addr = 1 says so */
	stop_current(tgid);
	if (emit_small(MT_EV_EXEC, 0, 1, 0, 0))
		cont_current(tgid); /* the daemon will not hear of it */
}

SEC("raw_tp/sched_process_exec")
int on_exec(struct bpf_raw_tracepoint_args *ctx)
{
	MT_NO_PRIV_STACK(ctx, &nopriv_raw_tp);
	exec_hook(ctx);
	return 0;
}

/* the same, the exec's second hook (first_hook) */
SEC("raw_tp/sched_process_exec")
int on_exec2(struct bpf_raw_tracepoint_args *ctx)
{
	MT_NO_PRIV_STACK(ctx, &nopriv_raw_tp);
	exec_hook(ctx);
	return 0;
}

/* Does cgroup c (of the v2 hierarchy) lie in the matched cgroup or below it? */
static __always_inline int cgroup_in_match(struct cgroup *c)
{
	int level = BPF_CORE_READ(c, level), want = (int)match_cglevel;

	if (level < want)
		return 0;
	/* self is a cgroup's first member: its parent's self is its parent */
	for (int i = 0; i < 64 && level > want; i++, level--)
		c = (struct cgroup *)BPF_CORE_READ(c, self.parent);
	return c && level == want && BPF_CORE_READ(c, kn, id) == match_cgid;
}

/*
 * --cgroup/--unit: a process was moved to another cgroup (cgroup.procs
 * written: a container runtime, systemd, an administrator). Into the
 * matched one, untraced: the daemon attaches to it as it runs (it is not
 * stopped: it may be anywhere in its code). Out of it, traced as a match:
 * its calls count no more from here (MT_UNTRACED_OWN), and the daemon ends
 * its entry. The tracepoint fires once a whole process has moved, for each
 * hierarchy; only the v2 one (hierarchy 0) is the match's.
 */
SEC("raw_tp/cgroup_attach_task")
int on_cgroup_move(struct bpf_raw_tracepoint_args *ctx)
{
	struct cgroup *dst = (struct cgroup *)ctx->args[0];
	struct task_struct *task = (struct task_struct *)ctx->args[2];
	struct mt_target_watch *w;
	struct mt_event *ev;
	__u32 tgid;
	int in;

	MT_NO_PRIV_STACK(ctx, &nopriv_raw_tp);
	if (!match_cgid || BPF_CORE_READ(dst, root, hierarchy_id) != 0)
		return 0;
	in = cgroup_in_match(dst);
	tgid = BPF_CORE_READ(task, tgid);
	w = bpf_map_lookup_elem(&targets, &tgid);
	if (in ? w != NULL : !w || !w->matched || w->untraced)
		return 0;
	if (!in) {
		w->untraced = MT_UNTRACED_OWN;
		untraced_probed = 1;
	}
	ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
	if (!ev) {
		count_lost(MT_EV_MATCH);
		return 0;
	}
	__builtin_memset(ev, 0, sizeof(*ev));
	ev->kind = MT_EV_MATCH;
	ev->tgid = tgid;
	ev->tid = tgid;
	ev->old_addr = in ? MT_MATCH_MOVED_IN : MT_MATCH_MOVED_OUT;
	ev->stack_end = MT_STACK_NONE;
	ev->time_ns = bpf_ktime_get_ns();
	/* nobody waits for it: the daemon is woken as for allocations (a
	 * record that wakes it would leave the task preempted in here: first_hook) */
	bpf_ringbuf_submit(ev, wakeup_flag());
	return 0;
}

/*
 * ld.so's _dl_debug_state, probed for a target that executed a new program
 * until its libraries are all mapped: stop there (before relocation and the
 * libraries' constructors) for the daemon to resolve the allocator.
 */
SEC("uprobe")
int ldso_state(struct pt_regs *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	MT_NO_PRIV_STACK(ctx, &stages);
	if (!bpf_map_lookup_elem(&targets, &tgid))
		return 0;
	stop_current(tgid);
	if (emit_small(MT_EV_LDSO, 0, 0, 0, 0))
		cont_current(tgid);
	return 0;
}

/*
 * ld.so's _dl_debug_state in a process the DWARF walker unwinds: once the
 * linker's map is consistent again after a dlopen or dlclose, stop (before
 * the new objects' constructors run) for the daemon to load their unwind
 * tables and list their mappings; it continues the process then.
 */
SEC("uprobe")
int uw_ldso(struct pt_regs *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct mt_unwind_proc *up = bpf_map_lookup_elem(&uw_procs, &tgid);
	__s32 state = 0;

	MT_NO_PRIV_STACK(ctx, &stages);
	if (!up || !bpf_map_lookup_elem(&targets, &tgid))
		return 0;
	if (up->r_state_addr &&
	    (bpf_probe_read_user(&state, sizeof(state), (void *)up->r_state_addr) || state != 0))
		return 0; /* RT_ADD or RT_DELETE: the consistent call follows */
	stop_current(tgid);
	if (emit_small(MT_EV_LDSO, 0, 1, 0, 0))
		cont_current(tgid);
	return 0;
}

/*
 * A CPython target whose frees are probed where its allocator table
 * dispatches them (src/daemon/attach/pydispatch.c) entered a function that installs an
 * allocator: stop it there, before the table changes, for the daemon to
 * probe PyObject_Free and PyMem_Free themselves again.
 */
SEC("uprobe")
int pyalloc_set(struct pt_regs *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct mt_target_watch *w;

	MT_NO_PRIV_STACK(ctx, &stages);
	/* cookie 1: the first argument is the domain; the raw one's table
	 * (PYMEM_DOMAIN_RAW, 0) is not where PyObject_Free dispatches */
	if (bpf_get_attach_cookie(ctx) == 1 && PT_REGS_PARM1(ctx) == 0)
		return 0;
	w = bpf_map_lookup_elem(&targets, &tgid);
	if (!w || w->untraced)
		return 0;
	stop_current(tgid);
	if (emit_small(MT_EV_PYALLOC, 0, 0, 0, 0))
		cont_current(tgid); /* counted lost: its frees may go untraced */
	return 0;
}

/*
 * A followed target forked a new process (not a thread): the child inherits
 * the probes (their perf events are inherited at fork), becomes a watched,
 * followed target itself, and the daemon learns of it through one event,
 * written before the child first runs (both hooks below fire before the
 * child is woken), so it precedes every event of the child. A match's
 * child is a match (it runs the same program): past max_matches it is left
 * untraced, counted, and marked so that the copies it carries count
 * nothing. Two hooks: task_newtask, at the end of copy_process, and
 * sched_process_fork just after it (first_hook).
 */
static __always_inline void fork_child(struct task_struct *child)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32, ctgid, cpid;
	struct mt_target_watch *w = bpf_map_lookup_elem(&targets, &tgid);
	struct mt_target_watch cw = {.follow = 1};
	__u16 is_match;
	__u8 *arenas;

	if (!w || !w->follow || w->untraced == MT_UNTRACED_OWN)
		return; /* MT_UNTRACED_OWN: its probes are not inherited after its exec */
	ctgid = BPF_CORE_READ(child, tgid);
	cpid = BPF_CORE_READ(child, pid);
	if (ctgid != cpid || ctgid == tgid)
		return; /* a thread */
	if (!first_hook(MT_EV_FORK, ctgid, BPF_CORE_READ(child, start_time), 0))
		return; /* the other hook took it */
	is_match = w->matched;
	if (w->untraced || (is_match && matched >= (__s32)cfg.max_matches)) {
		if (!w->untraced)
			__sync_fetch_and_add(&matches_over_limit, 1);
		/* copies of copies: untraced as well, until its exec */
		cw.untraced = MT_UNTRACED_COPIES;
		untraced_probed = 1;
		bpf_map_update_elem(&targets, &ctgid, &cw, BPF_ANY);
		return;
	}
	cw.matched = is_match;
	if (bpf_map_update_elem(&targets, &ctgid, &cw, BPF_ANY)) {
		count_lost(MT_EV_FORK);
		return;
	}
	if (is_match)
		__sync_fetch_and_add(&matched, 1);
	/* the child has its parent's mappings until it maps others */
	if (cfg.stack_walker == MT_WALK_DWARF) {
		struct mt_unwind_proc *up = bpf_map_lookup_elem(&uw_procs, &tgid);

		if (up && !bpf_map_update_elem(&uw_procs, &ctgid, up, BPF_ANY))
			__sync_fetch_and_add(&uw_lists_changed, 1);
	}
	/* a forked CPython maps arenas from its first instruction too */
	arenas = bpf_map_lookup_elem(&mmaptrace, &tgid);
	if (arenas)
		bpf_map_update_elem(&mmaptrace, &ctgid, arenas, BPF_ANY);
	if (emit_small(MT_EV_FORK, 0, ctgid, 0, 0)) {
		/* the daemon will not hear of it (counted lost): not a target */
		cw.untraced = MT_UNTRACED_COPIES;
		cw.matched = 0;
		untraced_probed = 1;
		bpf_map_update_elem(&targets, &ctgid, &cw, BPF_ANY);
		if (is_match)
			__sync_fetch_and_add(&matched, -1);
	}
}

/* copy_process() made the child: args (task, clone_flags) */
SEC("raw_tp/task_newtask")
int on_newtask(struct bpf_raw_tracepoint_args *ctx)
{
	MT_NO_PRIV_STACK(ctx, &nopriv_raw_tp);
	fork_child((struct task_struct *)ctx->args[0]);
	return 0;
}

/* kernel_clone() after copy_process(): args (parent, child) */
SEC("raw_tp/sched_process_fork")
int on_fork(struct bpf_raw_tracepoint_args *ctx)
{
	MT_NO_PRIV_STACK(ctx, &nopriv_raw_tp);
	fork_child((struct task_struct *)ctx->args[1]);
	return 0;
}

/*
 * A process ends: one that ran probes of ours untraced leaves "targets"
 * (the daemon takes its targets off itself, when their pidfd says so).
 */
SEC("raw_tp/sched_process_exit")
int on_process_exit(struct bpf_raw_tracepoint_args *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;
	struct mt_target_watch *w;

	MT_NO_PRIV_STACK(ctx, &nopriv_raw_tp);
	inflight_drop(bpf_get_current_task_btf(), (__u32)id);
	if (!untraced_probed || (__u32)id != tgid)
		return 0; /* a thread other than the leader: the process goes on */
	w = bpf_map_lookup_elem(&targets, &tgid);
	if (w && w->untraced)
		bpf_map_delete_elem(&targets, &tgid);
	return 0;
}

/*
 * The kernel's OOM killer chose a process (oom:mark_victim, right after it
 * sent the SIGKILL): if it is a traced one, one control record with its pid
 * and the time, so that the daemon marks it and keeps what it held before
 * its exit is seen. The classic tracepoint, read at its first field: pid
 * comes first in every kernel's format (6.1 passes only the pid; later ones
 * add the uid, the comm and the memory figures after it), and the program
 * loads whether or not the tracepoint exists (only the attach needs it).
 * The killer runs in some task of the cgroup, not always the victim: the
 * record is written here, not with emit_small (the current task's ids).
 * A record the ring buffer cannot take counts in oom_lost.
 */
volatile __u64 oom_lost;

struct mt_mark_victim_args {
	__u64 common; /* type, flags, preempt_count, pid of the tracing task */
	__s32 pid;
};

SEC("tracepoint/oom/mark_victim")
int on_oom_victim(struct mt_mark_victim_args *ctx)
{
	__u32 tgid = (__u32)ctx->pid;
	struct mt_target_watch *w = bpf_map_lookup_elem(&targets, &tgid);
	struct mt_event *ev;

	MT_NO_PRIV_STACK(ctx, &stages_tp);
	if (!w || w->untraced)
		return 0;
	ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
	if (!ev) {
		__sync_fetch_and_add(&oom_lost, 1);
		return 0;
	}
	__builtin_memset(ev, 0, sizeof(*ev));
	ev->kind = MT_EV_OOM;
	ev->tgid = tgid;
	ev->tid = (__u32)bpf_get_current_pid_tgid();
	ev->stack_end = MT_STACK_NONE;
	ev->flags = event_flags();
	ev->time_ns = bpf_ktime_get_ns();
	bpf_ringbuf_submit(ev, BPF_RB_FORCE_WAKEUP);
	return 0;
}
