/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Which object's malloc does a process really call, and where are its
 * allocator functions? The dynamic linker binds malloc to the first object in
 * its search order that defines it: the executable, then LD_PRELOAD
 * libraries, then DT_NEEDED libraries breadth first. We read that order from
 * the target's own link map (r_debug in ld.so), so interposers such as
 * jemalloc or tcmalloc are found exactly as the linker found them.
 */
#ifndef MEMTRACE_ALLOCATOR_H
#define MEMTRACE_ALLOCATOR_H

#include <stddef.h>
#include <stdint.h>

#include "memtrace/event.h"
#include "daemon/attach/placement.h"

/* The objects a process's allocator functions are probed in. */
enum alloc_object {
	ALLOC_OBJ_MALLOC, /* the object that defines the malloc the process binds */
	/*
	 * C++ operator new, where the process binds it (libstdc++, or the
	 * allocator itself for jemalloc/tcmalloc). Probing it as the outermost
	 * call gives the stack from new's caller: libstdc++'s operator new has
	 * no frame pointer, so a stack taken at malloc would skip its caller.
	 */
	ALLOC_OBJ_CXX,
	/* CPython's PyObject_Malloc family (--python-allocators): the object
	 * that defines it (the executable, or libpythonX.Y.so) */
	ALLOC_OBJ_PYTHON,
	ALLOC_NOBJECTS,
};

struct alloc_probe {
	int func;		  /* enum mt_func */
	enum alloc_object object; /* the object it is in */
	uint64_t offset;	  /* file offset of the function's first instruction */

	/* its name (static storage) */
	const char *symbol;
	/* where past offset its probes go (probesite.c) */
	struct placement place;
	/* CPython's frees: offset is the function the dispatcher reaches through
	 * the allocator table (pydispatch.c), which finds the pointer in
	 * arg0_reg (enum placement_gpr) */
	uint8_t dispatched;
	uint8_t arg0_reg;
	char via_target[48]; /* the function probed, when dispatched */
};

/* One object of enum alloc_object, when the process has it. */
struct alloc_file {
	char *path;	 /* the object as the target names it (for messages) */
	char *open_path; /* the same file as the daemon reaches it (/proc/PID/root/...) */
};

struct allocator {
	struct alloc_file obj[ALLOC_NOBJECTS];
	struct alloc_probe probes[64];
	int nprobes;
	uint32_t skipped; /* bitmask of enum mt_func found but not probeable (IFUNC) */
	/* CPython frees probed where they dispatch to (pydispatch.c): the
	 * dispatchers, to probe again if the program installs an allocator, and
	 * the functions that install one (file offsets in the CPython object) */
	struct alloc_probe py_dispatchers[2];
	int npy_dispatchers;
	uint64_t py_setters[4];
	uint8_t py_setter_domain[4]; /* its first argument is the domain (raw: ignored) */
	uint8_t py_setter_found[4];  /* by index of pydispatch_setters[] */
	int npy_setters;
};

/* Name of an allocator function ("malloc"). */
const char *allocator_func_name(int func);

/*
 * Find the allocator of pid. Returns 0, or -1 with a one-line reason in err
 * ("no object in the process defines malloc", "cannot read /proc/PID/maps:
 * ...").
 */
int allocator_resolve(int pid, struct allocator *a, char *err, size_t errlen);
void allocator_free(struct allocator *a); /* NULL: nothing */

/*
 * Does a's malloc come from glibc, which frees the chunks of an exiting
 * thread's cache a second time through free (the tracker's refrees)? Its
 * libc.so.6, or a static program whose symbols name tcache_thread_shutdown.
 */
int allocator_frees_twice(const struct allocator *a);

/*
 * For a process stopped right after exec, before its dynamic linker ran:
 * only the executable and ld.so are mapped. The allocator is then the
 * executable's own (if it exports malloc) or libc.so.6 from ld.so's
 * directory, which is where the linker will find it on a glibc system;
 * probes placed on that file take effect when it is mapped. Interposers
 * (LD_PRELOAD, DT_NEEDED jemalloc) are found by allocator_resolve() once
 * the linker is done. Static executables are resolved in full.
 */
int allocator_resolve_at_exec(int pid, struct allocator *a, char *err, size_t errlen);

/*
 * Add probes on CPython's allocator (PyObject_Malloc/Calloc/Realloc/Free and
 * PyMem_*) from the first object in search order that exports
 * PyObject_Malloc. Its frees are probed where they dispatch to when that is
 * exact (pydispatch.c), with probes on the functions that install an
 * allocator. Returns the number of probes added (0: not a CPython).
 */
int allocator_resolve_python(int pid, struct allocator *a);

/*
 * The program is about to install an allocator (its thread is stopped in
 * PyMem_SetAllocator or the like: their probes, a->py_setters, are there
 * while a free is probed where it dispatches to): probe the dispatchers
 * PyObject_Free and PyMem_Free themselves again, keeping the probes on the
 * functions they reached (a free in flight there finishes counted once,
 * nested). Returns how many probes were added (0: nothing to do).
 */
int allocator_undo_python_dispatch(struct allocator *a);

/*
 * When pid is a CPython whose build inlines pymalloc into its callers (so
 * probes on PyObject_Malloc see few object allocations), a one-line note
 * saying so and what would make object-level tracing work; else NULL.
 * Caller frees.
 */
char *allocator_python_note(int pid);

/* The path to open for a probe's object, and its name for messages. */
const char *allocator_probe_open_path(const struct allocator *a, const struct alloc_probe *p);
const char *allocator_probe_path(const struct allocator *a, const struct alloc_probe *p);

/*
 * Where each probed function is probed, as status shows it (at most
 * SNAPSHOT_MAX_SITES): out->sites and out->nsites, a target of s (whose
 * strings they are).
 */
struct snapshot;
struct snap_target;
void allocator_probe_sites(const struct allocator *a, struct snapshot *s, struct snap_target *out);

#endif
