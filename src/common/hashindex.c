// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The hash index's growth (see hashindex.h). */
#include "common/hashindex.h"
#include "common/util.h"

#include <stdlib.h>

int hash_index_grow(struct hash_index *t)
{
	size_t nslots = t->nslots ? t->nslots * 2 : 256;
	uint32_t *slots;
	uint64_t *hashes;

	if (nslots > (size_t)UINT32_MAX + 1)
		return -1; /* entry numbers are 32 bits */
	slots = calloc(nslots, sizeof(*slots));
	hashes = slots ? realloc(t->hashes, nslots / 2 * sizeof(*hashes)) : NULL;
	if (!hashes) {
		free(slots);
		return -1;
	}
	for (size_t i = 0; i < t->count; i++) {
		size_t pos = hashes[i] & (nslots - 1);

		while (slots[pos])
			pos = (pos + 1) & (nslots - 1);
		slots[pos] = (uint32_t)i + 1;
	}
	free(t->slots);
	t->slots = slots;
	t->hashes = hashes;
	t->nslots = nslots;
	return 0;
}

void hash_index_out_of_memory(void)
{
	log_msg("out of memory");
	abort();
}

void hash_index_free(struct hash_index *t)
{
	free(t->hashes);
	free(t->slots);
	*t = (struct hash_index){0};
}
