/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The daemon's state, shared by its event loop (memtraced.c), its socket
 * server (server.c) and the snapshot builder (collect.c). One thread owns it
 * all: no locks.
 */
#ifndef MEMTRACE_DAEMON_H
#define MEMTRACE_DAEMON_H

#include <stdint.h>

#include "probes.h"
#include "proto.h"
#include "target.h"
#include "timeline.h"
#include "tracker.h"
#include "memtrace/snapshot.h"

struct symbolizer;
struct pystacks;
struct ring_buffer;
struct client;
struct metrics_http;
struct worker;

/*
 * Where each stack really ends (collect.c): the stack table is only read
 * while a snapshot is built, so what was learned about a stack is kept here,
 * one byte per stack (enum mt_stack_end), and the broken ones with the
 * module their chain broke in.
 */
struct collect_ends {
	uint8_t *end;	  /* by stack index, below checked */
	uint32_t checked; /* stacks checked so far (the table only grows) */
	uint32_t cap;
	struct {
		uint32_t stack;
		const char *module; /* symbolizer_intern()ed */
	} * broken;
	uint32_t nbroken, broken_cap;
};

struct daemon {
	struct tracker tracker;
	struct target *targets;
	int ntargets;
	struct memtrace_bpf *skel;
	struct ring_buffer *rb;
	struct symbolizer *sym;
	int epfd;
	int listen_fd;
	int lock_fd;
	char *socket_path;
	char *lock_path;
	uint64_t start_ns;
	struct client **clients;      /* open connections by slot; NULL = free */
	int nclients;		      /* slots */
	uint64_t client_timeout_ns;   /* a client must be done within this */
	uint64_t pending_output;      /* reply bytes not yet taken by clients */
	uint64_t clients_timed_out;   /* dropped at their deadline */
	uint64_t clients_refused;     /* turned away: every slot taken */
	uint64_t clients_busy;	      /* answered "busy": pending_output too large */
	uint64_t exec_events_lost;    /* lost exec events already acted on */
	struct timeline timeline;     /* memory over time, sampled on the drain timer */
	struct snap_options options;  /* as given on the command line, for snapshots */
	struct metrics_http *metrics; /* --metrics-listen; NULL without */
	int python_allocators;	      /* --python-allocators: probe PyObject_Malloc & co. */
	int follow_forks;	      /* --follow-forks: children become targets */
	int max_targets;	      /* --max-targets: matched (--comm/--exe) targets alive */
	struct pystacks *py;	      /* Python frames of CPython targets */
	struct collect_ends ends;     /* where stacks end (collect.c) */
	struct worker *worker;	      /* serves requests that send stacks (worker.c) */
	uint64_t last_drain_ns;	      /* when the ring buffer was last drained */
	uint64_t drain_gap_max_ns; /* longest time between two drains, since start or reset-peak */
	uint64_t loop_busy_max_ns; /* longest the loop worked on one wakeup, the same window */
};

/* Start or stop tracing a process at run time (memtracectl attach/detach).
 * 0, or -1 with a one-line reason in err. */
int daemon_attach(struct daemon *d, int pid, char *err, size_t errlen);
int daemon_detach(struct daemon *d, int pid, char *err, size_t errlen);

/* Drain the ring buffer into the tracker. */
void daemon_consume(struct daemon *d);

/* Apply one ring buffer record (what daemon_consume does with each). */
void daemon_ingest(struct daemon *d, const void *data, size_t len);

/* The worker no longer holds the core (worker.h): do what waited for that. */
void daemon_resume(struct daemon *d);

/* How a snapshot is collected. */
struct collect_ctx {
	const uint64_t *lost; /* MT_LOST_SLOTS BPF lost counters, read when the request came */
	int check_ends;	      /* learn where new stacks end first (the symbolizer is ours) */
};

/*
 * Build the snapshot a request asks for (collect.c). It only reads the
 * daemon's state (and the symbolizer's caches), so the worker can run it on
 * a frozen core; its frame strings are the symbolizer's (frames_borrowed).
 */
int collect_snapshot(struct daemon *d, const struct proto_request *r, const struct collect_ctx *ctx,
		     struct snapshot *s, char *err, size_t errlen);
/* Stack idx as a snapshot shows it (counters, where it ends), its frames
 * from fb, their offset for framebuild_finish() in *frames_at. */
struct framebuild;
void collect_fill_stack(struct daemon *d, struct framebuild *fb, uint32_t idx,
			struct snap_stack *out, uint64_t *frames_at);
/* Learn where the stacks added since the last call end (d->ends): all of
 * them, or as many as budget_ns allows. */
void collect_check_ends(struct daemon *d);
void collect_check_ends_for(struct daemon *d, uint64_t budget_ns);
/* Free what collect_snapshot() keeps between requests. */
void collect_free(struct daemon *d);

/* Socket server (server.c). */
/* The worker thawed the core: answer the requests that waited for it. */
void server_resume(struct daemon *d);
/* The worker's reply frame (header and payload, proto.h) for the client in
 * slot, if it is still that one (serial); the buffer becomes the server's. */
void server_deliver(struct daemon *d, int slot, uint8_t *frame, size_t len, uint64_t serial);

int server_listen(struct daemon *d, const char *path, char *err, size_t errlen);
void server_close(struct daemon *d);
void server_accept(struct daemon *d);
/* An epoll event on the client in slot. */
void server_client_event(struct daemon *d, int slot, uint32_t events);
/* On the drain timer: drop the clients whose deadline has passed, and learn
 * where a slice of the new stacks end. */
void server_expire(struct daemon *d, uint64_t now_ns);

/* What an epoll event is about: data.u64 = tag << 32 | index. */
enum loop_tag {
	TAG_RINGBUF = 1,
	TAG_LISTEN,
	TAG_SIGNAL,
	TAG_TIMER,
	TAG_CLIENT,
	TAG_PIDFD,
	TAG_WORKER,		 /* worker.c: the worker wants a freeze or a thaw */
	TAG_METRICS_LISTEN = 32, /* metrics_http.c */
	TAG_METRICS_CLIENT,
};

#endif
