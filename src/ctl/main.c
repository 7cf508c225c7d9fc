// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * memtracectl: the client. It parses its command line (args.c), fetches a
 * snapshot from memtraced's socket or a file (fetch.c), has a view compute
 * rows from it and a renderer print them (view/, render/), and writes the
 * result to stdout or a file (output.c). Exit status: 0 ok, 1 runtime error,
 * 2 usage error.
 */
#include "ctl/args.h"
#include "ctl/fetch.h"
#include "ctl/output.h"
#include "ctl/render/folded.h"
#include "ctl/render/html.h"
#include "ctl/render/pprof.h"
#include "ctl/render/report.h"
#include "ctl/render/rows.h"
#include "ctl/render/scan.h"
#include "ctl/render/status.h"
#include "common/suppress.h"
#include "ctl/view/rows.h"
#include "ctl/view/series.h"
#include "common/util.h"
#include "memtrace/snapshot.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#define EXIT_RUNTIME 1
#define EXIT_USAGE   2

/*
 * Fetch what a asks for; a file is narrowed to the request unless whole.
 * --cgroup: the daemon is sent the path after the request and keeps that
 * cgroup's stacks itself; from a file, the client keeps them, then a
 * report's top of them.
 */
static int fetch(const struct args *a, const char *file, int whole, struct snapshot *snap,
		 struct buf *raw)
{
	if (a->cgroup_filter && !file && proto_request_cgroup(&a->request)) {
		if (raw)
			memset(raw, 0, sizeof(*raw));
		if (fetch_body(&a->request, a->socket, a->cgroup_filter, strlen(a->cgroup_filter),
			       snap))
			return -1;
		if (a->command == CMD_STATS) /* its targets and their totals too */
			fetch_filter_cgroup_targets(snap, a->cgroup_filter);
		return 0;
	}
	if (fetch_snapshot(&a->request, a->socket, file, whole, snap, raw))
		return -1;
	if (!a->cgroup_filter)
		return 0;
	if (fetch_filter_cgroup(snap, a->cgroup_filter, file ? file : a->socket)) {
		snapshot_free(snap);
		if (raw)
			buf_free(raw);
		return -1;
	}
	if (a->request.kind == PROTO_REPORT && !whole && a->filter_top)
		snapshot_select(snap, a->request.report.sort, a->filter_top, 0);
	if (a->command == CMD_STATS)
		fetch_filter_cgroup_targets(snap, a->cgroup_filter);
	return 0;
}

/* ---- commands that print one snapshot ---------------------------------------- */

/* Print s for a into out; 0, or -1 after a message. */
typedef int print_fn(struct buf *out, const struct snapshot *s, const struct args *a);

static int print_status(struct buf *out, const struct snapshot *s, const struct args *a)
{
	render_status(out, s, &a->render);
	return 0;
}

static int print_stats(struct buf *out, const struct snapshot *s, const struct args *a)
{
	struct snapshot breakdowns;
	const struct snapshot *m = s;

	/* --memory: the breakdowns are a request of their own; the counters come with them */
	if (a->memory.kind && !a->from) {
		if (fetch_snapshot(&a->memory, a->socket, NULL, 0, &breakdowns, NULL))
			return -1;
		if (a->cgroup_filter)
			fetch_filter_cgroup_targets(&breakdowns, a->cgroup_filter);
		m = &breakdowns;
	}
	if (a->memory.kind && !m->breakdowns) {
		log_msg("%s: this snapshot has no breakdown by kind of mapping (save one with "
			"memtracectl snapshot -o FILE)",
			a->from ? a->from : "memtraced");
		if (m != s)
			snapshot_free(&breakdowns);
		return -1;
	}
	render_stats(out, m, s, &a->render);
	if (m != s)
		snapshot_free(&breakdowns);
	return 0;
}

static int print_report(struct buf *out, const struct snapshot *s, const struct args *a)
{
	if (a->grouped) {
		struct grouped_view v;

		grouped_view_build(&v, s, &a->view);
		render_grouped(out, &v, &a->render);
		grouped_view_free(&v);
		return 0;
	}
	switch (a->render.format) {
	case RENDER_FOLDED:
		render_folded(out, s, &a->render);
		return 0;
	case RENDER_PPROF:
		return render_pprof(out, s, &a->render);
	case RENDER_HTML:
		render_html(out, s, &a->render);
		return 0;
	default:
		render_report(out, s, &a->render);
		return 0;
	}
}

static int print_peak(struct buf *out, const struct snapshot *s, const struct args *a)
{
	struct peak_view v;

	peak_view_build(&v, s, &a->view);
	render_peak(out, &v, &a->render);
	peak_view_free(&v);
	return 0;
}

static int print_leaks(struct buf *out, const struct snapshot *s, const struct args *a)
{
	struct leaks_view v;

	if (!s->block_list && s->kind != SNAP_LEAKS) {
		log_msg("%s: this snapshot has no live block list (save one with memtracectl "
			"snapshot -o FILE)",
			a->from);
		return -1;
	}
	leaks_view_build(&v, s, &a->view);
	render_leaks(out, &v, &a->render);
	leaks_view_free(&v);
	return 0;
}

static int print_timeline(struct buf *out, const struct snapshot *s, const struct args *a)
{
	struct series v;
	const char *why = "";

	if (series_build(&v, s, a->pid, &why)) {
		log_msg("pid %" PRIu32 " %s", a->pid, why);
		return -1;
	}
	render_timeline(out, &v, &a->render);
	series_free(&v);
	return 0;
}

/* ---- commands of their own ----------------------------------------------------- */

/* The user's suppression file, checked here (errors name its line) and sent as patterns. */
static int read_suppressions(const char *path, struct buf *out)
{
	struct suppressions sup;
	struct buf text = {0};
	char err[256];
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f) {
		log_msg("cannot open %s: %s", path, strerror(errno));
		return -1;
	}
	do {
		buf_reserve(&text, 65536);
		n = fread(text.data + text.len, 1, text.cap - text.len, f);
		text.len += n;
	} while (n && text.len <= SUPPRESS_MAX_BYTES);
	if (ferror(f)) {
		log_msg("cannot read %s: %s", path, strerror(errno));
		fclose(f);
		buf_free(&text);
		return -1;
	}
	fclose(f);
	if (suppressions_parse((const char *)text.data, text.len, &sup, err, sizeof(err))) {
		log_msg("%s: %s", path, err);
		buf_free(&text);
		return -1;
	}
	suppressions_format(&sup, out);
	suppressions_free(&sup);
	buf_free(&text);
	if (out->len > PROTO_MAX_SUPPRESSIONS) {
		log_msg("%s: more than %u bytes of patterns", path, PROTO_MAX_SUPPRESSIONS);
		return -1;
	}
	return 0;
}

/* leaks --unreachable: a scan of the running targets, its suppressions sent with it. */
static int run_scan(const struct args *a)
{
	struct proto_request req = a->request;
	struct buf body = {0}, out = {0};
	struct snapshot snap;
	int rc;

	if (a->suppressions && read_suppressions(a->suppressions, &body)) {
		buf_free(&body);
		return EXIT_USAGE;
	}
	req.scan.suppressions = (uint32_t)body.len;
	rc = fetch_scan(&req, a->socket, body.data, body.len, &snap);
	buf_free(&body);
	if (rc)
		return EXIT_RUNTIME;
	render_scan(&out, &snap, &a->render);
	snapshot_free(&snap);
	rc = write_output(a->output, out.data, out.len);
	buf_free(&out);
	return rc ? EXIT_RUNTIME : 0;
}

/* attach --cgroup/--unit: the path or name sent after the request line. */
static int run_attach_cgroup(const struct args *a)
{
	struct snapshot snap;
	struct buf out = {0};
	int rc;

	if (fetch_body(&a->request, a->socket, a->cgroup, strlen(a->cgroup), &snap))
		return EXIT_RUNTIME;
	rc = print_status(&out, &snap, a);
	snapshot_free(&snap);
	if (!rc)
		rc = write_output(a->output, out.data, out.len);
	buf_free(&out);
	return rc ? EXIT_RUNTIME : 0;
}

static int run_snapshot(const struct args *a)
{
	struct snapshot_counts counts;
	struct buf raw;
	int rc;

	if (fetch_checked(&a->request, a->socket, a->from, &raw, &counts))
		return EXIT_RUNTIME;
	rc = write_output(a->output, raw.data, raw.len);
	if (!rc && strcmp(a->output, "-"))
		fprintf(stderr,
			"memtracectl: wrote %s: %zu bytes, %" PRIu64 " stacks, %" PRIu64
			" live blocks, %" PRIu64 " timeline points\n",
			a->output, raw.len, counts.stacks, counts.blocks, counts.timeline_points);
	buf_free(&raw);
	return rc ? EXIT_RUNTIME : 0;
}

static int run_diff(const struct args *a)
{
	struct snapshot old, new;
	struct diff_view v;
	struct buf out = {0};
	int rc;

	if (fetch(a, a->files[0], 1, &old, NULL))
		return EXIT_RUNTIME;
	if (fetch(a, a->files[1], 1, &new, NULL)) {
		snapshot_free(&old);
		return EXIT_RUNTIME;
	}
	diff_view_build(&v, &old, &new, &a->view);
	render_diff(&out, &v, &a->render);
	diff_view_free(&v);
	snapshot_free(&old);
	snapshot_free(&new);
	rc = write_stdout(out.data, out.len);
	buf_free(&out);
	return rc ? EXIT_RUNTIME : 0;
}

static volatile sig_atomic_t watch_stop;

static void on_stop_signal(int sig)
{
	(void)sig;
	watch_stop = 1;
}

/*
 * Wait up to ns for the next refresh; returns 1 when the user asked to quit
 * (q on a terminal, or SIGINT/SIGTERM).
 */
static int watch_wait(uint64_t ns, int keys)
{
	uint64_t end = time_monotonic_ns() + ns;

	while (!watch_stop) {
		uint64_t now = time_monotonic_ns();
		struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
		char c;
		int r;

		if (now >= end)
			return 0;
		r = poll(&p, keys ? 1 : 0, (int)((end - now + 999999) / 1000000));
		if (r > 0 && read(STDIN_FILENO, &c, 1) == 1 && (c == 'q' || c == 'Q'))
			return 1;
		if (r > 0 && !(p.revents & POLLIN))
			keys = 0; /* stdin closed or broken: stop listening to it */
	}
	return 1;
}

static int run_watch(const struct args *a)
{
	struct watch_state w = {0};
	struct termios saved, raw;
	struct sigaction sa = {.sa_handler = on_stop_signal};
	int tty = isatty(STDOUT_FILENO), keys = tty && isatty(STDIN_FILENO), rc = 0;

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (keys && !tcgetattr(STDIN_FILENO, &saved)) {
		raw = saved;
		raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		raw.c_cc[VMIN] = 1;
		raw.c_cc[VTIME] = 0;
		tcsetattr(STDIN_FILENO, TCSANOW, &raw);
	} else {
		keys = 0;
	}
	for (uint64_t n = 0; !watch_stop; n++) {
		struct snapshot snap;
		struct watch_view v;
		struct buf out = {0};

		if (fetch(a, NULL, 0, &snap, NULL)) {
			rc = EXIT_RUNTIME;
			break;
		}
		watch_view_build(&v, &w, &snap, &a->view);
		render_watch(&out, &v, tty);
		watch_state_keep(&w, &v);
		watch_view_free(&v);
		snapshot_free(&snap);
		if (!tty)
			buf_put(&out, "\n", 1);
		rc = write_stdout(out.data, out.len) ? EXIT_RUNTIME : 0;
		buf_free(&out);
		if (rc || (a->iterations && n + 1 >= a->iterations))
			break;
		if (watch_wait(a->interval_ns, keys))
			break;
	}
	if (keys)
		tcsetattr(STDIN_FILENO, TCSANOW, &saved);
	watch_state_free(&w);
	return rc;
}

/* Fetch one snapshot, print it, write the output to stdout or -o FILE. */
static int run_print(const struct args *a, print_fn *print)
{
	struct snapshot snap;
	struct buf out = {0};
	int rc;

	if (fetch(a, a->from, 0, &snap, NULL))
		return EXIT_RUNTIME;
	rc = print(&out, &snap, a);
	snapshot_free(&snap);
	if (!rc)
		rc = write_output(a->output, out.data, out.len);
	buf_free(&out);
	return rc ? EXIT_RUNTIME : 0;
}

/*
 * What each command does: print the one snapshot it fetched (run_print), or
 * run on its own (snapshot copies it, diff reads two, watch refreshes).
 */
static const struct {
	print_fn *print;
	int (*run)(const struct args *a);
} commands[CMD_COUNT] = {
    [CMD_STATUS] = {.print = print_status},	/* the daemon and its targets */
    [CMD_STATS] = {.print = print_stats},	/* every counter, totals and per target */
    [CMD_REPORT] = {.print = print_report},	/* stacks, groups (--by) or a profile */
    [CMD_SNAPSHOT] = {.run = run_snapshot},	/* the snapshot's bytes, as they came */
    [CMD_DIFF] = {.run = run_diff},		/* two snapshot files */
    [CMD_PEAK] = {.print = print_peak},		/* groups live at the peak */
    [CMD_LEAKS] = {.print = print_leaks},	/* old live blocks, by stack */
    [CMD_TIMELINE] = {.print = print_timeline}, /* memory over time */
    [CMD_WATCH] = {.run = run_watch},		/* one snapshot per refresh */
    [CMD_RESET_PEAK] = {.print = print_stats},	/* the counters of the new window */
    [CMD_ATTACH] = {.print = print_status},	/* the targets, the new one among them */
    [CMD_DETACH] = {.print = print_status},	/* the targets after detaching */
};

int main(int argc, char **argv)
{
	struct args a;
	int rc;

	util_progname = "memtracectl";
	rc = args_parse(argc, argv, &a);
	if (rc)
		return rc > 0 ? 0 : EXIT_USAGE;
	if (a.unreachable)
		return run_scan(&a);
	if (a.cgroup)
		return run_attach_cgroup(&a);
	if (commands[a.command].run)
		return commands[a.command].run(&a);
	return run_print(&a, commands[a.command].print);
}
