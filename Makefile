# memtrace: one entry point for build, test and demo.
#
#   make            build memtraced and memtracectl into build/
#   make demo       install what is missing, build, trace the bundled demo
#   make check      install what is missing, build, run unit + end-to-end tests
#                   (also under ASan+UBSan)
#   make deps       install the Debian packages the build and tests need

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
LDLIBS   := -lbpf -ldw -lelf -lz -lstdc++

ifeq ($(SAN),1)
CFLAGS   += -fsanitize=address,undefined -fno-sanitize-recover=undefined
LDFLAGS  += -fsanitize=address,undefined
endif

ARCH     := $(shell uname -m | sed 's/x86_64/x86/;s/aarch64/arm64/')

COMMON_SRCS := src/snapshot.c src/proto.c src/util.c
DAEMON_SRCS := src/memtraced.c src/heap.c src/stacks.c src/tracker.c src/probes.c \
	       src/allocator.c src/procmaps.c src/elfsym.c src/symbolize.c src/server.c \
	       src/target.c src/collect.c src/dwarfline.c src/timeline.c
DAEMON_SRCS += src/pyinline.c src/pystacks.c
CLIENT_SRCS := src/memtracectl.c src/render.c src/json.c src/group.c src/views.c

COMMON_OBJS := $(COMMON_SRCS:src/%.c=$(O)/%.o)
DAEMON_OBJS := $(DAEMON_SRCS:src/%.c=$(O)/%.o)
CLIENT_OBJS := $(CLIENT_SRCS:src/%.c=$(O)/%.o)

DEB_PACKAGES := clang llvm libbpf-dev libelf-dev libdw-dev zlib1g-dev bpftool make gcc g++ \
		python3
DEB_PACKAGES += python3.11

.PHONY: all clean deps check unit e2e demo format format-check san bench bench-python

all: $(O)/memtraced $(O)/memtracectl

$(O):
	@mkdir -p $(O) $(O)/tests

# vmlinux.h comes from the running kernel's BTF (see docs/building.md).
$(O)/vmlinux.h: | $(O)
	$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@.tmp && mv $@.tmp $@

$(O)/memtrace.bpf.o: bpf/memtrace.bpf.c include/memtrace/event.h $(O)/vmlinux.h | $(O)
	$(CLANG) -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Iinclude -I$(O) \
		-Wall -Werror -c $< -o $@

$(O)/memtrace.skel.h: $(O)/memtrace.bpf.o
	$(BPFTOOL) gen skeleton $< name memtrace_bpf > $@.tmp && mv $@.tmp $@

$(O)/memtraced.o $(O)/probes.o: $(O)/memtrace.skel.h

$(O)/%.o: src/%.c $(wildcard src/*.h include/memtrace/*.h) | $(O)
	$(CC) $(CFLAGS) -c $< -o $@

$(O)/memtraced: $(DAEMON_OBJS) $(COMMON_OBJS)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

$(O)/memtracectl: $(CLIENT_OBJS) $(COMMON_OBJS)
	$(CC) $(LDFLAGS) $^ -lz -o $@

# ---- tests -----------------------------------------------------------------

UNIT_TESTS := $(patsubst tests/unit/%.c,$(O)/tests/%,$(wildcard tests/unit/test_*.c))
UNIT_LIB_OBJS := $(filter-out $(O)/memtraced.o $(O)/memtracectl.o,$(DAEMON_OBJS) \
		 $(COMMON_OBJS) $(CLIENT_OBJS))

# An archive, so each test links only the objects it uses.
$(O)/libmemtrace.a: $(UNIT_LIB_OBJS)
	rm -f $@ && ar rcs $@ $^

$(O)/tests/%: tests/unit/%.c tests/unit/unit.h $(O)/libmemtrace.a | $(O)
	$(CC) $(CFLAGS) -Itests/unit $< $(O)/libmemtrace.a $(LDFLAGS) $(LDLIBS) -o $@

# Test programs are built with frame pointers so their stacks are meaningful.
E2E_PROGS := $(patsubst tests/e2e/%.c,$(O)/tests/%,$(wildcard tests/e2e/*.c)) \
	     $(patsubst tests/e2e/%.cc,$(O)/tests/%,$(wildcard tests/e2e/*.cc))
E2E_PROGS += $(O)/tests/libplugin.so
$(O)/tests/dlopen_host: LDLIBS_E2E := -ldl
$(O)/tests/libplugin.so: tests/e2e/lib/plugin.c | $(O)
	$(CC) -O1 -g -fno-omit-frame-pointer -fPIC -shared -Wall -Wextra -Werror $< -o $@
$(O)/tests/%: tests/e2e/%.cc | $(O)
	$(CXX) -O1 -g -fno-omit-frame-pointer -fno-optimize-sibling-calls -Wall -Wextra \
		-Werror $< -o $@

$(O)/tests/%: tests/e2e/%.c | $(O)
	$(CC) -O1 -g -fno-omit-frame-pointer -fno-optimize-sibling-calls -Wall -Wextra \
		-Werror -pthread $< -o $@ $(LDLIBS_E2E)

unit: $(UNIT_TESTS)
	@tests/run-unit.sh $(UNIT_TESTS)

e2e: all $(E2E_PROGS)
	@python3 tests/e2e/run.py --build $(O)

$(O)/tests/allocbench: tests/bench/allocbench.c | $(O)
	$(CC) -O2 -g -fno-omit-frame-pointer -Wall -Wextra -Werror $< -o $@

# Figures for docs/performance.md (root, real BPF; takes a few minutes).
bench: deps
	$(MAKE) all $(O)/tests/allocbench
	python3 tests/bench/bench.py --build $(O)

bench-python: all
	python3 tests/bench/pybench.py --build $(O)

deps:
	@tests/install-deps.sh $(DEB_PACKAGES)

check: deps
	$(MAKE) all unit e2e
	$(MAKE) O=build/san SAN=1 all unit e2e
	$(MAKE) format-check

san:
	$(MAKE) O=build/san SAN=1 all

demo: deps
	$(MAKE) all $(O)/tests/demo
	@tests/demo.sh $(O)

format:
	clang-format -i $(wildcard src/*.c src/*.h include/memtrace/*.h bpf/*.c tests/unit/*.c tests/unit/*.h tests/e2e/*.c tests/e2e/lib/*.c tests/e2e/*.cc tests/bench/*.c)

format-check:
	clang-format --dry-run --Werror $(wildcard src/*.c src/*.h include/memtrace/*.h bpf/*.c tests/unit/*.c tests/unit/*.h tests/e2e/*.c tests/e2e/lib/*.c tests/e2e/*.cc tests/bench/*.c)

clean:
	rm -rf build
