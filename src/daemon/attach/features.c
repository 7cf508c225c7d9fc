// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The kernel features memtrace relies on, probed (see features.h). */
#include "daemon/attach/features.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <linux/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

enum probe_kind { BY_FILE, BY_MAP, BY_HELPER, BY_GLOBAL_FUNC, BY_TRACEFS };

static const struct feature_probe {
	struct kfeature f;
	enum probe_kind kind;
	int what; /* the map type, the helper */
	const char *path;
} probes[FEATURES_COUNT] = {
    {{"btf", "BTF", "/sys/kernel/btf/vmlinux", "5.4", 1, 0}, BY_FILE, 0, "/sys/kernel/btf/vmlinux"},
    {{"ringbuf", "ring buffer map", NULL, "5.8", 1, 0}, BY_MAP, BPF_MAP_TYPE_RINGBUF, NULL},
    {{"tail_calls", "tail calls", "program array", "4.2", 1, 0},
     BY_MAP,
     BPF_MAP_TYPE_PROG_ARRAY,
     NULL},
    {{"task_storage", "task storage map", NULL, "5.11", 1, 0},
     BY_MAP,
     BPF_MAP_TYPE_TASK_STORAGE,
     NULL},
    {{"global_functions", "global functions", "BTF func linkage", "5.6", 1, 0},
     BY_GLOBAL_FUNC,
     0,
     NULL},
    {{"get_current_task_btf", "bpf_get_current_task_btf", NULL, "5.11", 1, 0},
     BY_HELPER,
     BPF_FUNC_get_current_task_btf,
     NULL},
    {{"attach_cookie", "uprobe cookies", "bpf_get_attach_cookie", "5.15", 1, 0},
     BY_HELPER,
     BPF_FUNC_get_attach_cookie,
     NULL},
    {{"task_pt_regs", "bpf_task_pt_regs", NULL, "5.15", 1, 0},
     BY_HELPER,
     BPF_FUNC_task_pt_regs,
     NULL},
    {{"bpf_loop", "bpf_loop", NULL, "5.17", 1, 0}, BY_HELPER, BPF_FUNC_loop, NULL},
    {{"ringbuf_dynptr", "dynptr ring buffer reserve", "bpf_ringbuf_reserve_dynptr", "5.19", 1, 0},
     BY_HELPER,
     BPF_FUNC_ringbuf_reserve_dynptr,
     NULL},
    /* attaching: libbpf makes uprobes through perf's uprobe PMU, and through
     * tracefs without it; --follow-forks and --comm/--exe need tracefs */
    {{"uprobe_pmu", "perf uprobe PMU", "/sys/bus/event_source/devices/uprobe", "4.17", 0, 0},
     BY_FILE,
     0,
     "/sys/bus/event_source/devices/uprobe/type"},
    {{"tracefs_uprobes", "tracefs uprobe_events", NULL, "3.5", 0, 0}, BY_TRACEFS, 0, NULL},
};

/* A global function's BTF (linkage BTF_FUNC_GLOBAL): kernels before 5.6 refuse it. */
static int probe_global_func(void)
{
	struct btf *btf = btf__new_empty();
	int id_int, proto, rc = -1;

	if (!btf)
		return -1;
	id_int = btf__add_int(btf, "int", 4, BTF_INT_SIGNED);
	proto = id_int > 0 ? btf__add_func_proto(btf, id_int) : -1;
	if (proto > 0 && !btf__add_func_param(btf, "a", id_int) &&
	    btf__add_func(btf, "x", BTF_FUNC_GLOBAL, proto) > 0)
		rc = btf__load_into_kernel(btf) ? 0 : 1;
	btf__free(btf);
	return rc;
}

/* uprobe_events where the kernel puts tracefs, or tracefs not mounted yet
 * (memtraced mounts it there when it first needs it). */
static int probe_tracefs(void)
{
	char line[256];
	FILE *f;
	int found = 0;

	if (!access("/sys/kernel/tracing/uprobe_events", F_OK) ||
	    !access("/sys/kernel/debug/tracing/uprobe_events", F_OK))
		return 1;
	f = fopen("/proc/filesystems", "re");
	if (!f)
		return -1;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, "\ttracefs\n") != NULL;
	fclose(f);
	/* mountable, but are uprobe events built in? tell only when mounted */
	return found && !access("/sys/kernel/tracing", F_OK) ? -1 : 0;
}

void features_probe(struct kfeature f[FEATURES_COUNT])
{
	for (int i = 0; i < FEATURES_COUNT; i++) {
		const struct feature_probe *p = &probes[i];
		int rc = -1;

		f[i] = p->f;
		switch (p->kind) {
		case BY_FILE:
			rc = !access(p->path, F_OK);
			break;
		case BY_MAP:
			rc = libbpf_probe_bpf_map_type((enum bpf_map_type)p->what, NULL);
			break;
		case BY_HELPER:
			rc = libbpf_probe_bpf_helper(BPF_PROG_TYPE_KPROBE,
						     (enum bpf_func_id)p->what, NULL);
			break;
		case BY_GLOBAL_FUNC:
			rc = probe_global_func();
			break;
		case BY_TRACEFS:
			rc = probe_tracefs();
			break;
		}
		f[i].present = rc < 0 ? -1 : rc > 0;
	}
}

int features_missing(const struct kfeature *f, size_t n, char *out, size_t outlen)
{
	size_t len = 0;
	int count = 0;

	if (outlen)
		out[0] = 0;
	for (size_t i = 0; i < n; i++) {
		if (!f[i].required || f[i].present != 0)
			continue;
		if (len < outlen)
			len += (size_t)snprintf(out + len, outlen - len, "%s%s", count ? ", " : "",
						f[i].name);
		count++;
	}
	return count;
}

int features_floor_line(const struct kfeature *f, size_t n, const char *release, char *out,
			size_t outlen)
{
	char missing[512];

	if (!features_missing(f, n, missing, sizeof(missing)))
		return -1;
	snprintf(out, outlen, "this kernel (%s) lacks %s; memtrace needs Linux %s or newer",
		 release, missing, MEMTRACE_KERNEL_FLOOR);
	return 0;
}
