/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The stack window both walkers read the user stack through (included by
 * memtrace.bpf.c). A header of its own so that tests/unit/test_walk.c
 * compiles it in user space (tests/unit/bpfshim.h).
 */
#ifndef MEMTRACE_WINDOW_BPF_H
#define MEMTRACE_WINDOW_BPF_H

/*
 * The user stack read in pieces: both stack walkers read a frame's saved
 * words through a window of MT_WIN_BYTES copied at once, instead of one
 * bpf_probe_read_user per frame (each costs a helper call, an access check
 * and a user-access toggle; about 25 ns here). A window never reaches past
 * the end of the page the bytes asked for end in, so it touches no page the
 * word reads would not have: a window read fails exactly where they would.
 */

#define MT_WIN_BYTES 1024 /* a power of two */
#define MT_PAGE_SIZE 4096ull

struct stack_window {
	__u64 lo;  /* user address of buf[0] */
	__u32 len; /* bytes of buf that hold user memory: [lo, lo + len) */
	__u32 pad;
	__u64 buf[MT_WIN_BYTES / 8 + 2]; /* two words of slack: a 16-byte read at the last index */
};

/*
 * words 8-byte words (1 or 2) of user memory at addr into out; 0, or -1 when
 * it cannot be read. The window starts empty for each walk (len 0): the
 * stack is the walking thread's own, and it is stopped meanwhile.
 */
static __always_inline int win_read(struct stack_window *w, __u64 addr, __u64 *out, __u32 words)
{
	__u64 off = addr - w->lo, end, len;
	__u32 i;

	if (addr & 7) /* not where a saved word is: read as asked */
		return bpf_probe_read_user(out, words * 8, (void *)addr) ? -1 : 0;
	if (addr < w->lo || off + words * 8 > w->len) {
		end = (addr + words * 8 + MT_PAGE_SIZE - 1) & ~(MT_PAGE_SIZE - 1);
		if (end <= addr)
			return -1;
		len = end - addr;
		if (len > MT_WIN_BYTES)
			len = MT_WIN_BYTES;
		if (bpf_probe_read_user(w->buf, len, (void *)addr)) {
			w->len = 0;
			return -1;
		}
		w->lo = addr;
		w->len = len;
		off = 0;
	}
	i = (off >> 3) & (MT_WIN_BYTES / 8 - 1);
	out[0] = w->buf[i];
	if (words > 1)
		out[1] = w->buf[i + 1];
	return 0;
}

#endif
