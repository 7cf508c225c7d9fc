/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The Python frames a CPython target's thread is running, read from its
 * thread state (struct mt_py_config says where), as MT_PY_WORD words.
 * Included once by bpf/memtrace.bpf.c, after the maps and helpers it uses.
 */
#define MT_PY_MAX_THREADS 64

static __always_inline __u64 read_ptr(__u64 addr)
{
	__u64 v = 0;

	if (bpf_probe_read_user(&v, sizeof(v), (void *)addr))
		return 0;
	return v;
}

/*
 * The Python frames this thread is running, innermost first, as MT_PY_WORD
 * words into out[0..MT_MAX_PYFRAMES). The thread state is the one whose
 * thread_id (pthread_self, which is the fsbase on x86-64) is this thread's:
 * no GIL or thread-local assumption, so threads without the GIL are right.
 */
/*
 * The walk's state lives in a per-CPU map value, not on the stack: the
 * verifier does not track map contents, so each bpf_loop callback is checked
 * once instead of once per value of the frame count.
 */
struct py_walk {
	struct mt_py_config pc;
	__u64 fsbase, ts, frame;
	__u32 n, found;
	__u64 out[MT_MAX_PYFRAMES];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, MT_SCRATCH_SETS); /* one a scratch set (memtrace.bpf.c) */
	__type(key, __u32);
	__type(value, struct py_walk);
} pywalk SEC(".maps");

/* arg: the scratch set's number, which is the walk's */
static long py_thread_step(__u64 i, void *arg)
{
	struct py_walk *w = bpf_map_lookup_elem(&pywalk, arg);

	if (!w || !w->ts)
		return 1;
	if (read_ptr(w->ts + w->pc.tstate_thread_id) == w->fsbase) {
		w->found = 1;
		return 1;
	}
	w->ts = read_ptr(w->ts + w->pc.tstate_next);
	return 0;
}

static long py_frame_step(__u64 i, void *arg)
{
	struct py_walk *w = bpf_map_lookup_elem(&pywalk, arg);
	__u64 code, instr, first, idx, frame;
	__u32 n;
	__u8 owner = 0;

	if (!w)
		return 1;
	frame = w->frame;
	n = w->n;
	if (!frame || n >= MT_MAX_PYFRAMES)
		return 1;
	bpf_probe_read_user(&owner, 1, (void *)(frame + w->pc.frame_owner));
	w->frame = read_ptr(frame + w->pc.frame_previous);
	if (w->pc.minor >= 12 && owner == 3) {
		/* the interpreter loop's entry shim: the frame above it was the
		 * outermost of that run */
		if (n > 0)
			w->out[(n - 1) & (MT_MAX_PYFRAMES - 1)] |= MT_PY_GROUP_END;
		return 0;
	}
	code = read_ptr(frame + w->pc.frame_code);
	instr = read_ptr(frame + w->pc.frame_instr);
	if (w->pc.minor == 10) {
		/* f_lasti: an int, the instruction index, -1 before the first */
		idx = (__s32)instr < 0 ? 0 : (__u32)instr;
	} else {
		first = code + w->pc.code_adaptive;
		idx = instr >= first ? (instr - first) / 2 : 0;
	}
	if (idx >= (1ull << MT_PY_INSTR_BITS))
		idx = (1ull << MT_PY_INSTR_BITS) - 1;
	/* 3.10 runs each Python frame in its own call of the loop */
	w->out[n & (MT_MAX_PYFRAMES - 1)] =
	    MT_PY_WORD | ((code >> 3) & ((1ull << 44) - 1)) << MT_PY_INSTR_BITS | idx |
	    ((w->pc.minor == 11 && owner) || w->pc.minor == 10 ? MT_PY_GROUP_END : 0);
	w->n = n + 1;
	return 0;
}

/* Python frame words into out[0..MT_MAX_PYFRAMES); returns how many. */
static __always_inline __u32 walk_python(const struct mt_py_config *pc, __u64 *out, __u32 set)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct py_walk *w = bpf_map_lookup_elem(&pywalk, &set);
	__u32 n;
	__u64 ts;

	if (!w)
		return 0;
	w->pc = *pc;
	w->fsbase = task->thread.fsbase;
	w->found = 0;
	w->n = 0;
	ts = read_ptr(pc->interp_head);
	if (!ts)
		return 0;
	w->ts = read_ptr(ts + pc->interp_threads_head);
	bpf_loop(MT_PY_MAX_THREADS, py_thread_step, &set, 0);
	if (!w->found)
		return 0;
	w->frame = read_ptr(w->ts + pc->tstate_frame);
	if (w->frame && pc->cframe_current != ~0u)
		w->frame = read_ptr(w->frame + pc->cframe_current);
	bpf_loop(2 * MT_MAX_PYFRAMES, py_frame_step, &set, 0);
	n = w->n;
	if (n > MT_MAX_PYFRAMES)
		n = MT_MAX_PYFRAMES;
	if (n && bpf_probe_read_kernel(out, n * sizeof(__u64), w->out))
		return 0;
	return n;
}
