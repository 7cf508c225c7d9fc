// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Unit tests of thunk detection: the two instruction decoders on fixed
 * bytes (with and without endbr64 and bnd, backward and forward jumps,
 * truncated and other instructions), then real libraries: libstdc++'s
 * unsized delete is a jump to free through its PLT, its sized delete a jump
 * to another delete (not to free), and operator new is no jump at all;
 * jemalloc's, where installed. And which allocators free an address twice
 * (glibc's, by its name; not this program nor jemalloc, by their symbols).
 */
#include "daemon/attach/allocator.h"
#include "daemon/attach/elfjump.h"
#include "daemon/elf/elfmod.h"
#include "unit.h"

#include <unistd.h>

TEST(jump_target_rel32)
{
	static const uint8_t fwd[] = {0xe9, 0x10, 0x00, 0x00, 0x00};
	static const uint8_t back[] = {0xe9, 0xf0, 0xff, 0xff, 0xff};
	static const uint8_t endbr[] = {0xf3, 0x0f, 0x1e, 0xfa, 0xe9, 0x00, 0x01, 0x00, 0x00};

	CHECK_EQ_U64(x86_jump_target(fwd, sizeof(fwd), 0x1000), 0x1000 + 5 + 0x10);
	CHECK_EQ_U64(x86_jump_target(back, sizeof(back), 0x1000), 0x1000 + 5 - 0x10);
	CHECK_EQ_U64(x86_jump_target(endbr, sizeof(endbr), 0x2000), 0x2000 + 9 + 0x100);
}

TEST(jump_target_rel8)
{
	static const uint8_t fwd[] = {0xeb, 0x7f};
	static const uint8_t back[] = {0xeb, 0x80};

	CHECK_EQ_U64(x86_jump_target(fwd, sizeof(fwd), 0x1000), 0x1000 + 2 + 0x7f);
	CHECK_EQ_U64(x86_jump_target(back, sizeof(back), 0x1000), 0x1000 + 2 - 0x80);
}

TEST(jump_target_not_a_jump)
{
	static const uint8_t call[] = {0xe8, 0x10, 0x00, 0x00, 0x00};
	static const uint8_t test_jmp[] = {0x48, 0x85, 0xff, 0xe9, 0, 0, 0, 0};
	static const uint8_t cut[] = {0xe9, 0x10, 0x00};

	CHECK_EQ_U64(x86_jump_target(call, sizeof(call), 0x1000), 0);
	CHECK_EQ_U64(x86_jump_target(test_jmp, sizeof(test_jmp), 0x1000), 0);
	CHECK_EQ_U64(x86_jump_target(cut, sizeof(cut), 0x1000), 0);
	CHECK_EQ_U64(x86_jump_target(cut, 0, 0x1000), 0);
}

TEST(slot_jump)
{
	static const uint8_t plain[] = {0xff, 0x25, 0x00, 0x10, 0x00, 0x00};
	static const uint8_t plt_sec[] = {0xf3, 0x0f, 0x1e, 0xfa, 0xf2, 0xff,
					  0x25, 0xf8, 0xff, 0xff, 0xff};
	static const uint8_t call_slot[] = {0xff, 0x15, 0x00, 0x10, 0x00, 0x00};
	static const uint8_t cut[] = {0xff, 0x25, 0x00};

	CHECK_EQ_U64(x86_slot_jump(plain, sizeof(plain), 0x1000), 0x1000 + 6 + 0x1000);
	CHECK_EQ_U64(x86_slot_jump(plt_sec, sizeof(plt_sec), 0x1000), 0x1000 + 11 - 8);
	CHECK_EQ_U64(x86_slot_jump(call_slot, sizeof(call_slot), 0x1000), 0);
	CHECK_EQ_U64(x86_slot_jump(cut, sizeof(cut), 0x1000), 0);
}

static const char *const libstdcxx_paths[] = {
    "/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
    "/lib/x86_64-linux-gnu/libstdc++.so.6",
};

/* The module of path and the address of each of n exported functions; NULL (checked) if any is
 * missing. */
static struct elf_module *find_all(const char *path, const char *const *names, uint64_t *vaddrs,
				   size_t n)
{
	struct elf_module *m = elfmod_open(path, NULL, 0);
	int ok = m != NULL;

	CHECK(m != NULL);
	for (size_t i = 0; ok && i < n; i++) {
		ok = !elfmod_find_function(m, names[i], 1, &vaddrs[i], NULL);
		CHECK(ok);
	}
	if (!ok) {
		elfmod_close(m);
		return NULL;
	}
	return m;
}

TEST(libstdcxx_deletes)
{
	static const char *const names[] = {"_ZdlPv", "_ZdlPvm", "_Znwm"};
	const char *path = NULL;
	struct elf_module *m;
	uint64_t v[3];

	for (size_t i = 0; i < sizeof(libstdcxx_paths) / sizeof(*libstdcxx_paths); i++) {
		if (!access(libstdcxx_paths[i], R_OK))
			path = libstdcxx_paths[i];
	}
	CHECK(path != NULL); /* g++ is a build dependency */
	if (!path || !(m = find_all(path, names, v, 3)))
		return;
	/* libstdc++ defines no free: only the PLT can lead there */
	CHECK(elf_is_jump_to(m, v[0], "free", 0));
	CHECK(!elf_is_jump_to(m, v[1], "free", 0)); /* to _ZdlPv@plt */
	CHECK(elf_is_jump_to(m, v[1], "_ZdlPv", 0));
	CHECK(!elf_is_jump_to(m, v[2], "malloc", 0));
	CHECK(!elf_is_jump_to(NULL, v[0], "free", 0)); /* no file */
	/* the module let go of its file: its code can no longer be read */
	elfmod_release_file(m);
	CHECK(!elf_is_jump_to(m, v[0], "free", 0));
	elfmod_close(m);
}

/* jemalloc (make deps installs it for the interposer tests): its unsized
 * deletes are `jmp free@plt`, its sized ones free by themselves */
TEST(jemalloc_deletes)
{
	static const char *const names[] = {"_ZdlPv", "_ZdlPvm", "free"};
	const char *path = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2";
	struct elf_module *m;
	uint64_t v[3];

	if (access(path, R_OK)) {
		printf("test_elfjump: %s absent, jemalloc case not run\n", path);
		return;
	}
	if (!(m = find_all(path, names, v, 3)))
		return;
	CHECK(elf_is_jump_to(m, v[0], "free", v[2]));
	CHECK(!elf_is_jump_to(m, v[1], "free", v[2]));
	elfmod_close(m);
}

static int frees_twice(const char *path)
{
	struct allocator a = {0};

	a.obj[ALLOC_OBJ_MALLOC].path = (char *)path;
	a.obj[ALLOC_OBJ_MALLOC].open_path = (char *)path;
	return allocator_frees_twice(&a);
}

TEST(allocator_frees_twice_glibc_only)
{
	const char *je = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2";

	CHECK(frees_twice("/usr/lib/x86_64-linux-gnu/libc.so.6"));
	CHECK(frees_twice("/lib/libc-2.31.so"));
	CHECK(!frees_twice("/proc/self/exe")); /* read: no tcache_thread_shutdown */
	if (!access(je, R_OK))
		CHECK(!frees_twice(je));
	CHECK(!frees_twice("/nonexistent/libmalloc.so"));
}

UNIT_MAIN()
