// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer target: the ELF reader (src/daemon/elf/elfmod.c), which opens every module
 * a target maps, with all it reads on demand (code, symbols as code boundaries, .dynsym,
 * relocations), the DWARF line reader (src/daemon/symbols/dwarfline.c) and the thunk
 * detector (src/daemon/attach/elfjump.c) on the same bytes. Files in a traced process are
 * whatever its owner put there.
 */
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <stdio.h>

#include "daemon/attach/elfjump.h"
#include "daemon/elf/elfmod.h"
#include "daemon/symbols/dwarfline.h"

/* Functions whose start elf_is_jump_to decodes (besides fixed addresses). */
static uint64_t jump_vaddrs[4];

static void probe_lookups(struct elf_module *m)
{
	static const uint64_t addrs[] = {0, 0x1000, 0x401000, 0x10000, UINT64_MAX};
	uint64_t start, off, vaddr, size, value;
	const uint8_t *bytes;
	const char *name;
	uint8_t buf[16];
	size_t avail;
	int ifunc;

	elfmod_build_id(m);
	elfmod_has_interp(m);
	elfmod_is_dyn(m);
	for (size_t i = 0; i < sizeof(addrs) / sizeof(addrs[0]); i++) {
		elfmod_lookup(m, addrs[i], &start);
		if (!elfmod_vaddr_to_offset(m, addrs[i], &off)) {
			elfmod_offset_to_vaddr(m, off, &vaddr);
			elfmod_pread(m, buf, sizeof(buf), off);
		}
		elfmod_code(m, addrs[i], &avail);
		elfmod_symbol_at(m, addrs[i], &size, &name);
		elfmod_symbol_containing(m, addrs[i], &start, &size);
		elfmod_symbol_after(m, addrs[i], &start, &name);
		elfmod_slot_binds(m, addrs[i], "free");
	}
	for (size_t i = 0; !elfmod_code_section(m, i, &vaddr, &bytes, &avail); i++)
		elfmod_symbol_containing(m, vaddr + avail / 2, &start, &size);
	elfmod_dynamic_value(m, "_PyRuntime", &value);
	elfmod_find_function(m, "malloc", 1, &vaddr, &ifunc);
	elfmod_find_function(m, "free", 0, &vaddr, &ifunc);
	if (!elfmod_find_function(m, "_ZdlPv", 1, &vaddr, &ifunc))
		jump_vaddrs[1] = vaddr;
	jump_vaddrs[2] = elfmod_find_function(m, "_ZdlPvm", 1, &vaddr, &ifunc) ? 0 : vaddr;
	jump_vaddrs[3] = elfmod_find_function(m, "free", 1, &vaddr, &ifunc) ? 0 : vaddr;
	for (size_t i = 0; i < 3; i++)
		elf_is_jump_to(m, jump_vaddrs[i], "free", jump_vaddrs[3]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct elf_module *m;
	struct dwarf_lines *d;
	const char *file;
	char err[256];
	int fd, line;

	jump_vaddrs[0] = 0x1000;
	jump_vaddrs[1] = 0x401000;
	jump_vaddrs[2] = jump_vaddrs[3] = 0;
	m = elfmod_open_mem(data, size, "fuzz.elf", err, sizeof(err));
	if (m) {
		probe_lookups(m);
		elfmod_release_file(m);
		elfmod_lookup(m, 0x1000, NULL);
		elfmod_close(m);
	}
	/* libdwfl reads from a file descriptor: hand it the bytes in a memfd */
	fd = memfd_create("fuzz.elf", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	if (write(fd, data, size) == (ssize_t)size) {
		m = elfmod_open_fd(fd, "/nonexistent/fuzz.elf", err, sizeof(err));
		if (m) { /* the same through the file */
			probe_lookups(m);
			elfmod_close(m);
		}
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
