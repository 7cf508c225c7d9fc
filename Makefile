# memtrace: one entry point for build, test and demo.
#
#   make            build memtraced and memtracectl into build/
#   make demo       install what is missing, build, trace the bundled demo
#   make check      install what is missing, build, check the layering, run the unit
#                   tests, then unit + end-to-end tests under ASan+UBSan, the exec/fork/
#                   match tests again under load, fuzzing, the format check: each phase
#                   timed (docs/ci.md)
#   make check-layers  the one-way dependencies of docs/design.md, on the code
#   make check-kernels the kernel matrix (tests/kernels/run.py): Debian's 5.10, 6.1,
#                   6.1 PREEMPT_RT, 6.12, 6.12 PREEMPT_RT and unstable's newest booted under
#                   qemu (fetched into /var/cache/memtrace-kernels), memtraced --check in
#                   each and on the host, an end-to-end subset on 6.1, 6.1-rt and the
#                   newest, preempt_scratch on the RT builds and the newest; results in
#                   build/kernels/results.json. KERNELS="6.1 sid" picks kernels; GUESTS=N guests
#                   at once (2); E2E="NAME ..." other end-to-end tests. About 7 minutes
#                   here from an empty cache (docs/kernels.md)
#   make deps       install the Debian packages the build and tests need
#   make install    install into $(DESTDIR)$(PREFIX) (default /usr/local)
#   make deb        build a Debian package into build/

CC       ?= cc
CLANG    ?= clang
BPFTOOL  ?= bpftool
O        ?= build
SAN      ?=

VERSION  := 0.1.0
WARN     := -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter
CFLAGS   ?= -O2 -g
CFLAGS   += $(WARN) -std=gnu11 -fno-omit-frame-pointer -D_GNU_SOURCE \
	    -DMEMTRACE_VERSION=\"$(VERSION)\" -Iinclude -Isrc -I$(O)
LDLIBS   := -lbpf -ldw -lelf -lz -lstdc++ -lcapstone

ifeq ($(SAN),1)
# and the invariants of src/common/invariant.h, checked at every event and request
CFLAGS   += -fsanitize=address,undefined -fno-sanitize-recover=undefined -DMEMTRACE_CHECK_INVARIANTS
LDFLAGS  += -fsanitize=address,undefined
endif

ARCH     := $(shell uname -m | sed 's/x86_64/x86/;s/aarch64/arm64/')

# Each program is built from its folders (docs/design.md): src/common/ for
# both, src/daemon/ for memtraced, src/ctl/ for memtracectl. No file lists.
COMMON_SRCS := $(wildcard src/common/*.c)
DAEMON_SRCS := $(wildcard src/daemon/*.c src/daemon/*/*.c)
CLIENT_SRCS := $(wildcard src/ctl/*.c src/ctl/*/*.c)
SRC_HDRS    := $(wildcard src/*/*.h src/*/*/*.h include/memtrace/*.h)

COMMON_OBJS := $(COMMON_SRCS:src/%.c=$(O)/obj/%.o)
DAEMON_OBJS := $(DAEMON_SRCS:src/%.c=$(O)/obj/%.o)
CLIENT_OBJS := $(CLIENT_SRCS:src/%.c=$(O)/obj/%.o)
CLIENT_OBJS += $(O)/html_assets.o
MAIN_OBJS   := $(O)/obj/daemon/main.o $(O)/obj/ctl/main.o

# What building (and the demo) needs; the HTML report's libraries come from
# npm at build time (Node.js and npm from Debian when the machine has none).
BUILD_PACKAGES := clang llvm libbpf-dev libelf-dev libdw-dev zlib1g-dev libcapstone-dev bpftool \
		  make gcc g++ \
		  python3 $(if $(shell command -v npm),,nodejs npm)
# What the tests need on top.
DEB_PACKAGES := $(BUILD_PACKAGES)
DEB_PACKAGES += python3.11
# a program embedding Debian's shared libpython (tests/e2e/test_python.py)
DEB_PACKAGES += libpython3.11-dev
DEB_PACKAGES += libclang-rt-14-dev valgrind passwd util-linux
DEB_PACKAGES += debhelper systemd groff-base man-db adduser
DEB_PACKAGES += tmux
# the DWARF walker on Debian's binaries (tests/e2e/test_unwind_debian.py)
DEB_PACKAGES += redis-server redis-tools
# tracers that hold a target a leak scan must refuse (tests/e2e/test_scan.py)
DEB_PACKAGES += strace gdb
# a server that forks its backends, under pgbench (tests/e2e/test_match.py)
DEB_PACKAGES += postgresql postgresql-contrib
# interposing allocators (tests/e2e/test_interpose.py)
DEB_PACKAGES += libjemalloc2 libtcmalloc-minimal4 libmimalloc2.0
# outputs (tests/e2e/test_outputs.py): their real consumers; npm (the HTML report's libraries)
# comes with the machine's Node.js
DEB_PACKAGES += golang-go chromium prometheus binutils
# a real container (tests/e2e/test_container.py): podman with runc, its root filesystem built by
# debootstrap from the machine's Debian mirror (no image registry)
DEB_PACKAGES += podman runc debootstrap

.PHONY: all clean deps check check-layers unit e2e demo format format-check san bench bench-python bench-scale
.PHONY: bench-fork bench-replay bench-scan check-kernels e2e-progs tests-build
.PHONY: install uninstall deb deps-build unwind-test-data walk-test-data

all: $(O)/memtraced $(O)/memtracectl

$(O):
	@mkdir -p $(O) $(O)/tests

# its own target: under make -j, $(O) may exist already (made by a compile's
# mkdir) when the first test program is linked
$(O)/tests:
	@mkdir -p $@

# vmlinux.h comes from the running kernel's BTF (see docs/building.md).
$(O)/vmlinux.h: | $(O)
	$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@.tmp && mv $@.tmp $@

$(O)/memtrace.bpf.o: bpf/memtrace.bpf.c $(wildcard bpf/*.h include/memtrace/*.h) $(O)/vmlinux.h | $(O)
	$(CLANG) -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_$(ARCH) -Iinclude -I$(O) \
		-Wall -Werror -c $< -o $@

$(O)/memtrace.skel.h: $(O)/memtrace.bpf.o
	$(BPFTOOL) gen skeleton $< name memtrace_bpf > $@.tmp && mv $@.tmp $@

$(DAEMON_OBJS): $(O)/memtrace.skel.h

# V=1 prints each compiler command.
Q := $(if $(V),,@)

$(O)/obj/%.o: src/%.c $(SRC_HDRS) | $(O)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

$(O)/memtraced: $(DAEMON_OBJS) $(COMMON_OBJS)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

# The HTML report's libraries come from the npm registry (src/ctl/render/html/package-lock.json pins them)
# and are compiled into memtracectl as byte arrays: the report needs no network.
HTML_NPM := $(O)/npm/node_modules
HTML_ASSETS := html_d3_selection_js=$(HTML_NPM)/d3-selection/dist/d3-selection.min.js \
	       html_flamegraph_js=$(HTML_NPM)/d3-flame-graph/dist/d3-flamegraph.min.js \
	       html_flamegraph_css=$(HTML_NPM)/d3-flame-graph/dist/d3-flamegraph.css \
	       html_report_js=src/ctl/render/html/report.js html_report_css=src/ctl/render/html/report.css \
	       html_memory_js=src/ctl/render/html/memory.js html_memory_css=src/ctl/render/html/memory.css \
	       html_pid_js=src/ctl/render/html/pid.js \
	       html_cgroup_js=src/ctl/render/html/cgroup.js html_cgroup_css=src/ctl/render/html/cgroup.css

$(O)/npm/.installed: src/ctl/render/html/package.json src/ctl/render/html/package-lock.json | $(O)
	mkdir -p $(O)/npm && cp src/ctl/render/html/package.json src/ctl/render/html/package-lock.json $(O)/npm/
	cd $(O)/npm && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	touch $@

$(O)/html_assets.c: $(O)/npm/.installed src/ctl/render/html/embed.py $(wildcard src/ctl/render/html/*.js src/ctl/render/html/*.css)
	python3 src/ctl/render/html/embed.py $@ $(HTML_ASSETS)

$(O)/html_assets.o: $(O)/html_assets.c
	$(CC) $(CFLAGS) -c $< -o $@

$(O)/memtracectl: $(CLIENT_OBJS) $(COMMON_OBJS)
	$(CC) $(LDFLAGS) $^ -lz -o $@

# ---- tests -----------------------------------------------------------------

UNIT_TESTS := $(patsubst tests/unit/%.c,$(O)/tests/%,$(wildcard tests/unit/test_*.c))
UNIT_LIB_OBJS := $(filter-out $(MAIN_OBJS),$(DAEMON_OBJS) $(COMMON_OBJS) $(CLIENT_OBJS))

# An archive, so each test links only the objects it uses.
$(O)/libmemtrace.a: $(UNIT_LIB_OBJS)
	rm -f $@ && ar rcs $@ $^

$(O)/tests/%: tests/unit/%.c tests/unit/unit.h $(O)/libmemtrace.a | $(O)/tests
	$(CC) $(CFLAGS) -Wno-missing-field-initializers -Itests/unit $< $(O)/libmemtrace.a $(LDFLAGS) $(LDLIBS) -o $@

# The BPF stack walkers compiled as user-space C (tests/unit/bpfshim.h) and run
# on recorded stacks; gcc does not know the BPF headers' clang loop pragmas.
$(O)/tests/test_walk: tests/unit/test_walk.c tests/unit/unit.h tests/unit/bpfshim.h \
		$(wildcard bpf/*.h) $(O)/libmemtrace.a | $(O)/tests
	$(CC) $(CFLAGS) -Wno-missing-field-initializers -Wno-unknown-pragmas -Itests/unit -Ibpf $< \
		$(O)/libmemtrace.a $(LDFLAGS) $(LDLIBS) -o $@

# Every BPF program of both objects has a tail call (bpf/nopriv.bpf.h), read
# from the objects themselves.
$(O)/tests/test_nopriv: tests/unit/test_nopriv.c tests/unit/unit.h $(O)/memtrace.bpf.o \
		$(O)/bench.bpf.o $(O)/libmemtrace.a | $(O)/tests
	$(CC) $(CFLAGS) -Wno-missing-field-initializers -Itests/unit -DMT_BPF_OBJS_DIR='"$(O)"' $< \
		$(O)/libmemtrace.a $(LDFLAGS) $(LDLIBS) -o $@

# Test programs are built with frame pointers so their stacks are meaningful.
E2E_PROGS := $(patsubst tests/e2e/%.c,$(O)/tests/%,$(wildcard tests/e2e/*.c)) \
	     $(patsubst tests/e2e/%.cc,$(O)/tests/%,$(wildcard tests/e2e/*.cc))
E2E_PROGS += $(O)/tests/libplugin.so $(O)/tests/heapscale
$(O)/tests/dlopen_host: LDLIBS_E2E := -ldl
# the workload of a real container: static, it runs in any root file system (test_container.py)
$(O)/tests/ctalloc: LDLIBS_E2E := -static
$(O)/tests/libplugin.so: tests/e2e/lib/plugin.c | $(O)/tests
	$(CC) -O1 -g -fno-omit-frame-pointer -fPIC -shared -Wall -Wextra -Werror $< -o $@
$(O)/tests/%: tests/e2e/%.cc | $(O)/tests
	$(CXX) -O1 -g -fno-omit-frame-pointer -fno-optimize-sibling-calls -Wall -Wextra \
		-Werror $< -o $@

$(O)/tests/%: tests/e2e/%.c | $(O)/tests
	$(CC) -O1 -g -fno-omit-frame-pointer -fno-optimize-sibling-calls -Wall -Wextra \
		-Werror -pthread $< -o $@ $(LDLIBS_E2E)

# The daemon with test hooks, for e2e tests and make bench only, never installed:
# every daemon source compiled again with MEMTRACE_TEST_HOOKS into $(O)/hooks/
# (memtraced itself has none of them). MEMTRACE_TEST_REFUSE=walk_dwarf,... makes the
# verifier refuse those programs for real (tests/e2e/test_check.py: the walkers'
# fallback), MEMTRACE_TEST_*LAG_MS (test_races.py), MEMTRACE_TEST_SCAN_STALL_MS
# (test_scan.py) and MEMTRACE_INFLIGHT_SLOTS (test_faults.py) hold it back or
# shrink a table; MEMTRACE_BENCH_PROGRAMS attaches bench.bpf.c's programs, an
# object of their own that shares memtrace.bpf.o's ring buffer (tests/bench/bench.py).
E2E_PROGS += $(O)/tests/memtraced-hooks
HOOKS_OBJS := $(DAEMON_SRCS:src/%.c=$(O)/hooks/%.o)
$(O)/bench.bpf.o: bpf/bench.bpf.c bpf/nopriv.bpf.h include/memtrace/event.h $(O)/vmlinux.h | $(O)
	$(CLANG) -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_$(ARCH) -Iinclude -I$(O) \
		-Wall -Werror -c $< -o $@
$(O)/bench.skel.h: $(O)/bench.bpf.o
	$(BPFTOOL) gen skeleton $< name bench_bpf > $@.tmp && mv $@.tmp $@
$(O)/hooks/%.o: src/%.c $(SRC_HDRS) $(O)/memtrace.skel.h $(O)/bench.skel.h | $(O)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $< (hooks)")
	$(Q)$(CC) $(CFLAGS) -DMEMTRACE_TEST_HOOKS -c $< -o $@
$(O)/tests/memtraced-hooks: $(HOOKS_OBJS) $(COMMON_OBJS)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

# The same programs without frame pointers, as distributions build: the DWARF
# walker must give the same stacks (tests/e2e/test_unwind.py).
NOFP_FLAGS := -O2 -g -fomit-frame-pointer -fno-optimize-sibling-calls -Wall -Wextra -Werror
E2E_PROGS += $(addprefix $(O)/tests/nofp/,paths qsort_cb threads dlopen_host libplugin.so sigalloc \
	     cfiexpr stacktop \
	     cxx_vector)
$(O)/tests/nofp/dlopen_host: LDLIBS_E2E := -ldl
$(O)/tests/nofp/libplugin.so: tests/e2e/lib/plugin.c | $(O)/tests
	@mkdir -p $(@D)
	$(CC) $(NOFP_FLAGS) -fPIC -shared $< -o $@
# one code, two frame sizes (tests/e2e/dlreopen.c)
E2E_PROGS += $(O)/tests/nofp/libreopen_a.so $(O)/tests/nofp/libreopen_b.so
$(O)/tests/dlreopen: LDLIBS_E2E := -ldl
$(O)/tests/nofp/libreopen_a.so: tests/e2e/lib/reopen.c | $(O)/tests
	@mkdir -p $(@D)
	$(CC) $(NOFP_FLAGS) -DLOCALS=256 -DSIZE=1111 -fPIC -shared $< -o $@
$(O)/tests/nofp/libreopen_b.so: tests/e2e/lib/reopen.c | $(O)/tests
	@mkdir -p $(@D)
	$(CC) $(NOFP_FLAGS) -DLOCALS=8192 -DSIZE=2222 -fPIC -shared $< -o $@
$(O)/tests/nofp/%: tests/e2e/%.c | $(O)/tests
	@mkdir -p $(@D)
	$(CC) $(NOFP_FLAGS) -pthread $< -o $@ $(LDLIBS_E2E)
$(O)/tests/nofp/%: tests/e2e/%.cc | $(O)/tests
	@mkdir -p $(@D)
	$(CXX) $(NOFP_FLAGS) $< -o $@

# The small ELF files tests/unit/test_unwind.c reads are committed (their rows
# must not change with the toolchain); this remakes them from their source.
UNWIND_DATA := tests/unit/data
unwind-test-data:
	cc -nostdlib -shared -Wl,--build-id=sha1 $(UNWIND_DATA)/unwind_rules.S \
		-o $(UNWIND_DATA)/unwind_rules.so
	cc -nostdlib -shared -Wl,--build-id=sha1 -Wl,--no-ld-generated-unwind-info -DDEBUG_FRAME \
		$(UNWIND_DATA)/unwind_rules.S -o $(O)/unwind_debug.full
	objcopy --only-keep-debug $(O)/unwind_debug.full $(UNWIND_DATA)/unwind_debug.debug
	objcopy --strip-debug --add-gnu-debuglink=$(UNWIND_DATA)/unwind_debug.debug \
		$(O)/unwind_debug.full $(UNWIND_DATA)/unwind_debug.so

# The stacks tests/unit/test_walk.c walks, recorded under gdb from the e2e programs
# (tests/tools/walkcapture.py) with the call frame information they need.
WALK_DATA := tests/unit/data/walk
walk-test-data: $(addprefix $(O)/tests/,paths nofp/paths nofp/qsort_cb nofp/threads \
		nofp/cxx_vector nofp/sigalloc nofp/cfiexpr nofp/stacktop)
	rm -f $(WALK_DATA)/*.stack $(WALK_DATA)/*.cfi.gz
	python3 tests/tools/walkcapture.py $(WALK_DATA) \
		nofp_paths=$(O)/tests/nofp/paths:path_d fp_paths=$(O)/tests/paths:path_d \
		nofp_qsort=$(O)/tests/nofp/qsort_cb:record_compare \
		nofp_threads=$(O)/tests/nofp/threads:start_thread \
		nofp_cxx=$(O)/tests/nofp/cxx_vector:grow_string \
		nofp_signal=$(O)/tests/nofp/sigalloc:on_signal \
		nofp_cfiexpr=$(O)/tests/nofp/cfiexpr:call_through_expression \
		nofp_stacktop=$(O)/tests/nofp/stacktop:'descend*6'

unit: $(UNIT_TESTS) $(O)/memtracectl
	@tests/run-unit.sh $(UNIT_TESTS) tests/unit/test_check_layers.py tests/unit/test_e2e_registry.py
	@tests/golden/run.sh $(O)

# The layering of docs/design.md held to the code (tests/check-layers.py):
# no dependency against it and no cycle between files, of includes or (read
# from the objects with nm) of calls. tests/unit/test_check_layers.py shows
# that it fails on each.
check-layers: all
	@python3 tests/check-layers.py --build $(O)

# Each test's seconds, slowest first (tests/e2e/run.py --times)
E2E_TIMES ?= $(O)/e2e-times.tsv
# K=NAME: the tests whose name contains NAME (several: K="a b"); REPEAT=N runs them N times
# and prints each check's pass count; STRESS=N runs them beside CPU, memory and fork load
# (tests/e2e/stress.py: N busy loops per CPU)
e2e: all $(E2E_PROGS)
	@python3 tests/e2e/run.py --build $(O) --times $(E2E_TIMES) $(addprefix -k ,$(K)) \
		$(if $(REPEAT),--repeat $(REPEAT)) $(if $(filter-out 0,$(STRESS)),--stress $(STRESS))

$(O)/tests/allocbench: tests/bench/allocbench.c | $(O)/tests
	$(CC) -O2 -g -fno-omit-frame-pointer -Wall -Wextra -Werror -pthread $< -o $@

$(O)/tests/allocbench_nofp: tests/bench/allocbench.c | $(O)/tests
	$(CC) $(NOFP_FLAGS) -pthread $< -o $@

# The scale workload: many live blocks over many stacks (tests/bench/scalebench.py).
$(O)/tests/heapscale: tests/bench/heapscale.c | $(O)/tests
	$(CC) -O1 -g -fno-omit-frame-pointer -fno-optimize-sibling-calls -Wall -Wextra -Werror \
		-pthread $< -o $@

# The ingest replay (tests/bench/replay.c): the daemon's ingest and core, no BPF.
$(O)/tests/replay: tests/bench/replay.c $(O)/libmemtrace.a | $(O)/tests
	$(CC) $(CFLAGS) $< $(O)/libmemtrace.a $(LDFLAGS) $(LDLIBS) -o $@

# The leak scan's workload (tests/bench/scanbench.py).
$(O)/tests/scanheap: tests/bench/scanheap.c | $(O)/tests
	$(CC) -O1 -g -fno-omit-frame-pointer -fno-optimize-sibling-calls -Wall -Wextra -Werror \
		$< -o $@

$(O)/tests/cxxbench: tests/bench/cxxbench.cc | $(O)/tests
	$(CXX) -O2 -g -fno-omit-frame-pointer -Wall -Wextra -Werror $< -o $@

# Figures for docs/performance.md (root, real BPF; takes a few minutes): native
# allocations, the scale section (tests/bench/scalebench.py), then a Python
# workload (tests/bench/pybench.py). bench-python and bench-scale rewrite only
# their section.
bench: deps
	$(MAKE) all $(O)/tests/allocbench $(O)/tests/allocbench_nofp $(O)/tests/cxxbench \
		$(O)/tests/heapscale $(O)/tests/replay $(O)/tests/scanheap $(O)/tests/spin \
		$(O)/tests/memtraced-hooks
	python3 tests/bench/bench.py --build $(O)

# The ingest replay alone: recorded streams through the daemon's ingest and core, no BPF.
bench-replay: all $(O)/tests/heapscale $(O)/tests/replay
	python3 tests/bench/replaybench.py --build $(O)

bench-python: all
	python3 tests/bench/pybench.py --build $(O)

# The leak scan section alone: the pause of leaks --unreachable at 10 k, 100 k
# and 1 M live blocks with 100 MB to scan (a few minutes).
bench-scan: all $(O)/tests/scanheap $(O)/tests/spin
	python3 tests/bench/scanbench.py --build $(O)

# The scale section alone: views of a million live blocks over 131 072 stacks,
# memory per block, drain gaps while clients take snapshots (several minutes).
bench-scale: all $(O)/tests/heapscale
	python3 tests/bench/scalebench.py --build $(O)

# The fork section alone: what forks of a parent holding a million live blocks
# cost the daemon (tests/bench/forkbench.py).
bench-fork: all $(O)/tests/heapscale
	python3 tests/bench/forkbench.py --build $(O)

# ---- fuzzing (libFuzzer, clang) -------------------------------------------
# One target per parser of untrusted bytes; corpus seeds in tests/fuzz/corpus/<target>/.
# `make fuzz` runs each for FUZZ_SECONDS; `make check` runs each for a few seconds.
# New inputs go to $(O)/fuzz/corpus-<target>/, never into the committed seeds.

FUZZ_SECONDS ?= 60
FUZZ_TARGETS := proto snapshot procmaps elf pyoffsets unwind placement rss suppress cgroup
FUZZ_CFLAGS  := -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
		$(WARN) -std=gnu11 -D_GNU_SOURCE -DMEMTRACE_VERSION=\"$(VERSION)\" -Iinclude -Isrc
FUZZ_SRCS_proto    := $(COMMON_SRCS)
FUZZ_SRCS_snapshot := $(COMMON_SRCS)
FUZZ_SRCS_procmaps := src/daemon/proc/procmaps.c src/daemon/proc/kroots.c $(COMMON_SRCS)
FUZZ_SRCS_rss      := $(addprefix src/daemon/proc/,rss.c smaps.c memmap.c procmaps.c) $(COMMON_SRCS)
FUZZ_SRCS_suppress := $(COMMON_SRCS)
FUZZ_SRCS_cgroup   := src/daemon/proc/cgroup.c $(COMMON_SRCS)
ELF_SRCS := $(wildcard src/daemon/elf/*.c)
FUZZ_SRCS_elf      := $(addprefix src/daemon/,symbols/dwarfline.c attach/elfjump.c) \
		       $(ELF_SRCS) $(COMMON_SRCS)
FUZZ_SRCS_pyoffsets := src/daemon/symbols/pyoffsets.c src/daemon/symbols/dwarfline.c \
		       $(ELF_SRCS) $(COMMON_SRCS)
FUZZ_SRCS_unwind   := src/daemon/unwind/unwind_table.c $(COMMON_SRCS)
FUZZ_SRCS_placement := $(addprefix src/daemon/,attach/placement.c attach/probesite.c) \
		       $(ELF_SRCS) $(COMMON_SRCS)

.SECONDEXPANSION:
$(O)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $$(FUZZ_SRCS_$$*) $(SRC_HDRS)
	@mkdir -p $(O)/fuzz
	$(CLANG) $(FUZZ_CFLAGS) $< $(FUZZ_SRCS_$*) -ldw -lelf -lz -lcapstone -o $@

# ---- soak (not in CI): SOAK_MINUTES of two threads at full speed -------------------------
SOAK_MINUTES ?= 60
.PHONY: soak
soak: all $(O)/tests/churn
	python3 tests/soak.py --build $(O) --minutes $(SOAK_MINUTES)

.PHONY: fuzz fuzz-build
fuzz-build: $(FUZZ_TARGETS:%=$(O)/fuzz/fuzz_%)

fuzz: fuzz-build
	@tests/fuzz/run.sh $(O)/fuzz $(FUZZ_SECONDS) $(FUZZ_TARGETS)

deps:
	@tests/install-deps.sh $(DEB_PACKAGES)

deps-build:
	@tests/install-deps.sh $(BUILD_PACKAGES)

# The races only the kernel can show, beside CPU, memory and fork load (tests/e2e/stress.py),
# in the sanitizer build where the daemon is slowest: events arriving while the daemon lags
# (races_: the test build's lag hooks), an exec and a fork racing the probes' placing
# (faults_target_exec, family_, match_preforker), the keeper continuing a process held when
# the daemon is killed (daemon_killed). The orders of a target's life that are decisions
# (exec during attach, a fork in an exec hold, a match past --max-targets, ld.so loading while
# resolving, detach during exec, an exit in each phase) are unit tests (test_lifecycle.c), and
# every test here runs once more, without load, in the full sanitizer run.
STRESS_TESTS := races_ faults_target_exec daemon_killed family_ match_preforker
STRESS_REPEAT ?= 1

# The end-to-end tests that run in the plain build too: those an ASan build cannot run
# (valgrind on memtracectl)
PLAIN_E2E_TESTS := faults_valgrind_renderers

# What CI runs (.ci/run), phase by phase, each timed (tests/phases.sh; the table at the end,
# and where the minutes go in docs/ci.md). The end-to-end tests run once, in the sanitizer
# build: they catch there what the plain build would, and memory errors besides. The plain
# build's layering and unit tests stay (seconds), and its PLAIN_E2E_TESTS. Builds use every
# CPU (JOBS); each phase is one goal, so make -j check is safe too.
JOBS    ?= $(shell nproc)
PHASES  := $(O)/phases.tsv
PHASE    = @tests/phases.sh $(PHASES) run
check:
	@tests/phases.sh $(PHASES) start
	$(PHASE) deps $(MAKE) deps
	$(PHASE) build $(MAKE) -j$(JOBS) tests-build
	$(PHASE) check-layers $(MAKE) check-layers
	$(PHASE) unit $(MAKE) unit
	$(PHASE) e2e $(MAKE) e2e K="$(PLAIN_E2E_TESTS)"
	$(PHASE) san-build $(MAKE) -j$(JOBS) O=build/san SAN=1 tests-build
	$(PHASE) san-unit $(MAKE) O=build/san SAN=1 unit
	$(PHASE) san-e2e $(MAKE) O=build/san SAN=1 e2e
	$(PHASE) san-stress $(MAKE) O=build/san SAN=1 e2e K="$(STRESS_TESTS)" \
		REPEAT=$(STRESS_REPEAT) STRESS=1 E2E_TIMES=build/san/stress-times.tsv
	$(PHASE) fuzz-build $(MAKE) -j$(JOBS) fuzz-build
	$(PHASE) fuzz $(MAKE) fuzz FUZZ_SECONDS=5
	$(PHASE) format $(MAKE) format-check
	@tests/phases.sh $(PHASES) table

# Everything the unit and end-to-end tests run, built (the build phases of make check).
tests-build: all $(UNIT_TESTS) $(E2E_PROGS)

san:
	$(MAKE) O=build/san SAN=1 all

# What booting other kernels needs (tests/kernels/run.py): qemu, an initramfs of busybox with
# the guest kernel's modules (cpio, kmod; xz and zstd unpack the modules)
KERNEL_PACKAGES := qemu-system-x86 busybox-static cpio kmod xz-utils zstd

e2e-progs: all $(E2E_PROGS)

check-kernels: deps
	@tests/install-deps.sh $(KERNEL_PACKAGES)
	$(MAKE) e2e-progs
	@python3 tests/kernels/run.py --build $(O) $(addprefix --only ,$(KERNELS)) \
		$(if $(GUESTS),--jobs $(GUESTS)) $(if $(E2E),--e2e-tests "$(E2E)")

demo: deps-build
	$(MAKE) all $(O)/tests/demo
	@tests/demo.sh $(O)

FORMAT_FILES := $(COMMON_SRCS) $(DAEMON_SRCS) $(CLIENT_SRCS) $(SRC_HDRS) \
		$(wildcard bpf/*.c bpf/*.h tests/unit/*.c tests/unit/*.h tests/e2e/*.c \
		tests/e2e/lib/*.c tests/e2e/*.cc tests/bench/*.c tests/bench/*.cc tests/fuzz/*.c)

format:
	clang-format -i $(FORMAT_FILES)

format-check:
	clang-format --dry-run --Werror $(FORMAT_FILES)

clean:
	rm -rf build

# ---- install and package (see docs/packaging.md) ---------------------------

PREFIX         ?= /usr/local
DESTDIR        ?=
BINDIR         ?= $(PREFIX)/bin
SBINDIR        ?= $(PREFIX)/sbin
MANDIR         ?= $(PREFIX)/share/man
DOCDIR         ?= $(PREFIX)/share/doc/memtrace
BASHCOMPDIR    ?= $(PREFIX)/share/bash-completion/completions
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
INSTALL        ?= install
# where the systemd unit's memtraced writes OOM snapshots (--oom-snapshots)
OOMDIR         ?= /var/lib/memtrace/oom
INSTALLED := $(SBINDIR)/memtraced $(BINDIR)/memtracectl $(MANDIR)/man8/memtraced.8 \
	     $(MANDIR)/man1/memtracectl.1 $(BASHCOMPDIR)/memtraced $(BASHCOMPDIR)/memtracectl \
	     $(SYSTEMDUNITDIR)/memtraced@.service $(SYSTEMDUNITDIR)/memtraced.service

# The BPF object is inside memtraced (skeleton), so the binaries are all it needs.
install: all
	$(INSTALL) -d $(DESTDIR)$(SBINDIR) $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man8 \
		$(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(SYSTEMDUNITDIR) \
		$(DESTDIR)$(DOCDIR)
	$(INSTALL) -m 0755 $(O)/memtraced $(DESTDIR)$(SBINDIR)/memtraced
	$(INSTALL) -m 0755 $(O)/memtracectl $(DESTDIR)$(BINDIR)/memtracectl
	$(INSTALL) -m 0644 packaging/man/memtraced.8 $(DESTDIR)$(MANDIR)/man8/memtraced.8
	$(INSTALL) -m 0644 packaging/man/memtracectl.1 $(DESTDIR)$(MANDIR)/man1/memtracectl.1
	$(INSTALL) -m 0644 packaging/completion/memtraced $(DESTDIR)$(BASHCOMPDIR)/memtraced
	$(INSTALL) -m 0644 packaging/completion/memtracectl $(DESTDIR)$(BASHCOMPDIR)/memtracectl
	sed 's|@SBINDIR@|$(SBINDIR)|g' packaging/systemd/memtraced@.service \
		> $(DESTDIR)$(SYSTEMDUNITDIR)/memtraced@.service
	chmod 0644 $(DESTDIR)$(SYSTEMDUNITDIR)/memtraced@.service
	sed -e 's|@SBINDIR@|$(SBINDIR)|g' \
	    -e 's|^Description=.*|Description=memtrace allocation tracer (idle: memtracectl attach PID)|' \
	    -e 's|^\(ExecStart=.*\) --pid %i$$|\1|' packaging/systemd/memtraced@.service \
		> $(DESTDIR)$(SYSTEMDUNITDIR)/memtraced.service
	chmod 0644 $(DESTDIR)$(SYSTEMDUNITDIR)/memtraced.service
	$(INSTALL) -m 0644 README.md docs/*.md $(DESTDIR)$(DOCDIR)/
	$(INSTALL) -d -m 0700 $(DESTDIR)$(OOMDIR)

uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALLED))
	rm -rf $(DESTDIR)$(DOCDIR)

# A .deb from a copy of the tree in $(O)/deb (dpkg-buildpackage writes into the
# parent directory, which must not be the checkout's).
DEB_SRC := $(O)/deb/memtrace-$(VERSION)
# What dpkg-buildpackage needs beyond the build's own packages (debian/control's
# Build-Depends: debhelper-compat (= 13) is debhelper's)
DEBBUILD_PACKAGES := debhelper dpkg-dev fakeroot

deb: deps-build
	@tests/install-deps.sh $(DEBBUILD_PACKAGES)
	rm -rf $(O)/deb && mkdir -p $(DEB_SRC)
	tar -cf - --exclude=./build --exclude=./.git --exclude='./$(O)' . | tar -xf - -C $(DEB_SRC)
	cp -r packaging/debian $(DEB_SRC)/debian
	cd $(DEB_SRC) && dpkg-buildpackage -us -uc -b
	cp $(O)/deb/memtrace_$(VERSION)-*_*.deb $(O)/
	@ls $(O)/memtrace_$(VERSION)-*_*.deb
