// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer target: probe placement (src/daemon/attach/placement.c) on arbitrary code
 * bytes (a function's, as read from a file a traced process maps), the
 * dispatcher follower on a memory made of the same bytes (a target's
 * memory is whatever it holds), the byte scans, and the ELF side
 * (src/daemon/attach/probesite.c over src/daemon/elf/elfmod.c) on the bytes as a file. The
 * first byte chooses the arguments read, the return probe and the register of the first
 * argument.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "daemon/attach/placement.h"
#include "daemon/attach/probesite.h"
#include "daemon/elf/elfmod.h"

struct mem {
	const uint8_t *data;
	size_t size;
};

/* Words of the input at (address mod its length): every read may succeed. */
static int read_input(void *ctx, uint64_t addr, uint64_t *value)
{
	const struct mem *m = ctx;

	if (m->size < 8 || addr % 3 == 0)
		return -1;
	memcpy(value, m->data + addr % (m->size - 7), 8);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct placement_need need;
	struct placement p;
	struct placement_dispatch d;
	struct mem m = {data, size};
	uint8_t mode = size ? data[0] : 0;
	const uint8_t *code = size ? data + 1 : data;
	size_t len = size ? size - 1 : 0, at;
	int fd;

	placement_need_abi(&need, mode & 7, mode & 8);
	need.arg_in[0] = (uint8_t)(mode >> 4);
	placement_decide(code, len, 0x401000, &need, &p);
	if (p.offset > len || p.arg_reg[0] >= GPR_COUNT)
		__builtin_trap();
	if (p.offset && (!placement_emulated(code + p.offset, len - p.offset) || p.why[0]))
		__builtin_trap(); /* placed only on an emulated instruction, without a reason */
	placement_follow_dispatch(code, len, 0x401000, read_input, &m, &d);
	placement_scan_rel32(code, len, 0x401000, 0x401001, 0x401010);
	placement_scan_rel8(code, len, 0x401000, 0x401001, 0x401010);
	placement_branches_into(code, len, 0x401000, 0x401001, 0x401010, mode & 1);
	if (placement_find_branch(code, len, 0x401000, 0x401010, &at) && at >= len)
		__builtin_trap();

	/* the bytes as an ELF file, through a descriptor (the decisions' cache) */
	fd = memfd_create("fuzz-placement", MFD_CLOEXEC);
	if (fd >= 0) {
		if (write(fd, data, size) == (ssize_t)size) {
			struct probesite_req req[3] = {
			    {.offset = 0}, {.offset = 0x1000}, {.offset = 0x1040}};
			struct placement out[3];
			struct elf_module *f;
			char err[256];

			f = elfmod_open_fd(fd, "fuzz-placement", err, sizeof(err));
			for (int i = 0; i < 3; i++)
				placement_need_abi(&req[i].need, 1, i & 1);
			probesite_place(f, req, 3, out);
			if (f) {
				uint64_t start, fsize;
				size_t avail;

				elfmod_symbol_containing(f, 0x1010, &start, &fsize);
				elfmod_symbol_after(f, 0x1000, &start, NULL);
				elfmod_code(f, 0x1000, &avail);
				elfmod_close(f);
			}
			probesite_forget();
		}
		close(fd);
	}
	return 0;
}
