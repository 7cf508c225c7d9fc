// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Tests of the one hash index (common/hashindex.h) and the string table on
 * it: entries numbered in the order added, found again through growth, a
 * hash alone never trusted (every entry under one hash still tells apart),
 * lookups that add nothing.
 */
#include "unit.h"

#include "common/hashindex.h"
#include "common/strtab.h"

#include <stdlib.h>

/* The entries, by number. */
static struct {
	uint64_t v[5000];
} test_keys;

static int key_eq(const void *arg, size_t i)
{
	const uint64_t *want = arg;

	return test_keys.v[i] == *want;
}

/* Keys under their own hash, or all under one (collide). */
static void fill(int collide)
{
	struct hash_index t = {0};
	size_t n = sizeof(test_keys.v) / sizeof(test_keys.v[0]);

	for (size_t i = 0; i < n; i++) {
		uint64_t k = 1000003ull * i + 7;
		uint64_t h = collide ? 42 : hash_mix(0, k);
		int is_new;

		CHECK_EQ_U64(hash_index_get(&t, h, key_eq, &k), SIZE_MAX);
		CHECK_EQ_U64(hash_index_try_find(&t, h, key_eq, &k, &is_new), i);
		CHECK(is_new);
		test_keys.v[i] = k;
		if (collide && i > 300)
			break; /* linear probing of one chain: quadratic, keep it short */
	}
	for (size_t i = 0; i < t.count; i++) {
		uint64_t k = test_keys.v[i], h = collide ? 42 : hash_mix(0, k);
		int is_new = -1;

		CHECK_EQ_U64(hash_index_get(&t, h, key_eq, &k), i);
		CHECK_EQ_U64(hash_index_find(&t, h, key_eq, &k, &is_new), i);
		CHECK(!is_new);
	}
	CHECK(t.nslots >= 2 * t.count);
	CHECK_EQ_U64(t.nslots & (t.nslots - 1), 0);
	hash_index_free(&t);
	CHECK(!t.slots && !t.hashes && !t.count && !t.nslots);
}

TEST(test_index)
{
	struct hash_index empty = {0};
	uint64_t k = 1;

	CHECK_EQ_U64(hash_index_get(&empty, 5, key_eq, &k), SIZE_MAX);
	fill(0);
	fill(1);
}

TEST(test_hashes)
{
	CHECK_EQ_U64(hash_bytes("", 0, HASH_SEED), HASH_SEED);
	CHECK_EQ_U64(hash_bytes("a", 1, HASH_SEED), 0xaf63dc4c8601ec8cull); /* FNV-1a's "a" */
	CHECK(hash_mix(0, 1) != hash_mix(0, 2));
	CHECK(hash_mix(1, 0) != hash_mix(2, 0));
}

TEST(test_strtab)
{
	struct strtab t = {0};
	char name[32];

	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < 3000; i++) {
			snprintf(name, sizeof(name), "s%d", i);
			CHECK_EQ_U64(strtab_intern(&t, name, strlen(name)), i);
		}
	}
	CHECK_EQ_U64(strtab_count(&t), 3000);
	CHECK_STR(t.strs[1234], "s1234");
	CHECK_EQ_U64(t.lens[1234], 5);
	/* a prefix, and bytes past the length, are other strings */
	CHECK_EQ_U64(strtab_intern(&t, "s12345", 3), 12);
	CHECK_EQ_U64(strtab_intern(&t, "", 0), 3000);
	CHECK_EQ_U64(strtab_intern(&t, "x\0y", 3), 3001);
	CHECK_EQ_U64(strtab_intern(&t, "x\0z", 3), 3002);
	CHECK_EQ_U64(strtab_intern(&t, "x", 1), 3003);
	strtab_free(&t);
	CHECK_EQ_U64(strtab_count(&t), 0);
}

UNIT_MAIN()
