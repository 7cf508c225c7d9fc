/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A minimal unit test harness. A test is written once, as TEST(name) { ... }:
 * the macro registers it (a constructor links its descriptor into a list), so
 * there is no second list of the tests to keep. A file ends with UNIT_MAIN(),
 * or, when it needs setup or cleanup around the tests, with its own
 * main(argc, argv) that returns UNIT_RUN(argc, argv).
 *
 * The tests run in the order they are defined (sorted by the line recorded in
 * each descriptor, whatever order the constructors run in). Names given as
 * arguments run only those tests; an unknown name is an error (exit 2). CHECK
 * failures print file:line and the expression, a failed test prints
 * "FAIL name", and the file prints "FILE: N passed, N failed" (which
 * tests/run-unit.sh adds up); the exit status is non-zero if any test failed.
 */
#ifndef MEMTRACE_UNIT_H
#define MEMTRACE_UNIT_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int unit_failed_checks;
static int unit_passed, unit_failed;

struct unit_test {
	const char *name;
	void (*fn)(void);
	int line;
	struct unit_test *next;
};

/* The registered tests, kept sorted by line: definition order. */
static struct unit_test *unit_tests;

static inline void unit_register(struct unit_test *t)
{
	struct unit_test **p = &unit_tests;

	while (*p && (*p)->line <= t->line)
		p = &(*p)->next;
	t->next = *p;
	*p = t;
}

#define TEST(name)                                                                                 \
	static void name(void);                                                                    \
	static struct unit_test unit_test_##name = {#name, name, __LINE__, NULL};                  \
	__attribute__((constructor)) static void unit_register_##name(void)                        \
	{                                                                                          \
		unit_register(&unit_test_##name);                                                  \
	}                                                                                          \
	static void name(void)

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

static inline void unit_run_one(const struct unit_test *t)
{
	int before = unit_failed_checks;

	t->fn();
	if (unit_failed_checks == before) {
		unit_passed++;
	} else {
		unit_failed++;
		fprintf(stderr, "FAIL %s\n", t->name);
	}
}

/*
 * Runs the tests named in argv[1..], or all of them without arguments, and
 * prints the summary line under file's name. An unknown name runs nothing.
 */
static inline int unit_run(const char *file, int argc, char **argv)
{
	const struct unit_test *t;

	for (int i = 1; i < argc; i++) {
		for (t = unit_tests; t && strcmp(t->name, argv[i]); t = t->next)
			;
		if (!t) {
			fprintf(stderr, "%s: no test named %s\n", file, argv[i]);
			return 2;
		}
	}
	for (t = unit_tests; t; t = t->next) {
		int wanted = argc <= 1;

		for (int i = 1; i < argc && !wanted; i++)
			wanted = !strcmp(t->name, argv[i]);
		if (wanted)
			unit_run_one(t);
	}
	printf("%s: %d passed, %d failed\n", file, unit_passed, unit_failed);
	return unit_failed ? 1 : 0;
}

#define UNIT_RUN(argc, argv) unit_run(__FILE__, (argc), (argv))

#define UNIT_MAIN()                                                                                \
	int main(int argc, char **argv)                                                            \
	{                                                                                          \
		return UNIT_RUN(argc, argv);                                                       \
	}

#endif
