// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer target: the ELF reader (src/elfsym.c), which opens every module
 * a target maps, and the DWARF line reader (src/dwarfline.c) on the same
 * bytes. Files in a traced process are whatever its owner put there.
 */
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "dwarfline.h"
#include "elfsym.h"

static void probe_lookups(struct elf_module *m)
{
	static const uint64_t addrs[] = {0, 0x1000, 0x401000, 0x10000, UINT64_MAX};
	uint64_t start, off, vaddr;
	int ifunc;

	elfmod_build_id(m);
	elfmod_has_interp(m);
	elfmod_is_dyn(m);
	for (size_t i = 0; i < sizeof(addrs) / sizeof(addrs[0]); i++) {
		elfmod_lookup(m, addrs[i], &start);
		if (!elfmod_vaddr_to_offset(m, addrs[i], &off))
			elfmod_offset_to_vaddr(m, off, &vaddr);
	}
	elfmod_find_function(m, "malloc", 1, &vaddr, &ifunc);
	elfmod_find_function(m, "free", 0, &vaddr, &ifunc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct elf_module *m;
	struct dwarf_lines *d;
	const char *file;
	char err[256];
	int fd, line;

	m = elfmod_open_mem(data, size, "fuzz.elf", err, sizeof(err));
	if (m) {
		probe_lookups(m);
		elfmod_close(m);
	}
	/* libdwfl reads from a file descriptor: hand it the bytes in a memfd */
	fd = memfd_create("fuzz.elf", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	if (write(fd, data, size) == (ssize_t)size) {
		d = dwarf_lines_open(fd, "/nonexistent/fuzz.elf");
		if (d) {
			dwarf_lines_lookup(d, 0x1000, &file, &line);
			dwarf_lines_symbol(d, 0x1000);
			dwarf_lines_close(d);
		}
	}
	close(fd);
	return 0;
}
