// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer target: the unwind table builder (src/daemon/unwind/unwind_table.c) on any
 * bytes, as the main file and as a separate debug file: libdw reads the call
 * frame information, the builder decodes each FDE's address range itself.
 * Every row found is looked up again through the page index.
 */
#include <gelf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/unwind/unwind_table.h"

static void check(const struct unwind_table *t)
{
	for (uint32_t i = 0; i < t->nrows; i++) {
		const struct mt_unwind_row *r = unwind_table_find(t, t->base + t->rows[i].pc);

		if (t->rows[i].pc < t->size && r != &t->rows[i])
			abort(); /* the index must find every row at its own start */
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t empty_elf[64] = {0x7f, 'E', 'L', 'F', 2, 1, 1};
	struct unwind_table t;
	char err[256], *copy = malloc(size ? size : 1), *stub = malloc(sizeof(empty_elf));
	Elf *elf, *other;

	memcpy(copy, data, size);
	memcpy(stub, empty_elf, sizeof(empty_elf));
	elf_version(EV_CURRENT);
	elf = elf_memory(copy, size);
	other = elf_memory(stub, sizeof(empty_elf));
	if (!unwind_table_build(elf, NULL, &t, err, sizeof(err))) {
		check(&t);
		unwind_table_free(&t);
	}
	if (!unwind_table_build(other, elf, &t, err, sizeof(err))) {
		check(&t);
		unwind_table_free(&t);
	}
	if (elf)
		elf_end(elf);
	if (other)
		elf_end(other);
	free(copy);
	free(stub);
	return 0;
}
