/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A minimal unit test harness: each test file defines TEST(name) functions and
 * lists them in main() with RUN(name). CHECK failures print file:line and the
 * expression; the program exits non-zero if any check failed and prints
 * "unit: N passed, N failed" per file.
 */
#ifndef MEMTRACE_UNIT_H
#define MEMTRACE_UNIT_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int unit_failed_checks;
static int unit_passed, unit_failed;

#define TEST(name) static void name(void)

#define CHECK(expr)                                                                                \
	do {                                                                                       \
		if (!(expr)) {                                                                     \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #expr);   \
			unit_failed_checks++;                                                      \
		}                                                                                  \
	} while (0)

#define CHECK_EQ_U64(a, b)                                                                         \
	do {                                                                                       \
		uint64_t unit_a_ = (uint64_t)(a), unit_b_ = (uint64_t)(b);                         \
		if (unit_a_ != unit_b_) {                                                          \
			fprintf(stderr,                                                            \
				"%s:%d: CHECK failed: %s == %s (%" PRIu64 " != %" PRIu64 ")\n",    \
				__FILE__, __LINE__, #a, #b, unit_a_, unit_b_);                     \
			unit_failed_checks++;                                                      \
		}                                                                                  \
	} while (0)

#define CHECK_STR(a, b)                                                                            \
	do {                                                                                       \
		const char *unit_a_ = (a), *unit_b_ = (b);                                         \
		if (!unit_a_ || !unit_b_ || strcmp(unit_a_, unit_b_)) {                            \
			fprintf(stderr, "%s:%d: CHECK failed: %s == \"%s\" (got \"%s\")\n",        \
				__FILE__, __LINE__, #a, unit_b_ ? unit_b_ : "(null)",              \
				unit_a_ ? unit_a_ : "(null)");                                     \
			unit_failed_checks++;                                                      \
		}                                                                                  \
	} while (0)

#define RUN(name)                                                                                  \
	do {                                                                                       \
		int unit_before_ = unit_failed_checks;                                             \
		name();                                                                            \
		if (unit_failed_checks == unit_before_) {                                          \
			unit_passed++;                                                             \
		} else {                                                                           \
			unit_failed++;                                                             \
			fprintf(stderr, "FAIL %s\n", #name);                                       \
		}                                                                                  \
	} while (0)

#define UNIT_DONE()                                                                                \
	(printf("%s: %d passed, %d failed\n", __FILE__, unit_passed, unit_failed),                 \
	 unit_failed ? 1 : 0)

#endif
