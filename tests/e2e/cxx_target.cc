// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * C++ target for the stack tests: operator new reaches malloc, and frames
 * must come out demangled. Cache::insert leaks 100 Entry objects (48 bytes
 * each); Buffer::fill allocates and frees 50 arrays of 1000 bytes.
 */
#include <cstdio>
#include <cstring>

namespace demo
{
struct Entry {
	long key;
	char payload[40];
};

class Cache
{
      public:
	__attribute__((noinline)) Entry *insert(int key)
	{
		Entry *e = new Entry;
		e->key = key;
		memset(e->payload, 0, sizeof(e->payload));
		return e;
	}
};

class Buffer
{
      public:
	__attribute__((noinline)) void fill(int n)
	{
		char *p = new char[n];
		memset(p, 1, (size_t)n);
		sink = p[n / 2];
		delete[] p;
	}
	volatile char sink = 0;
};
} // namespace demo

static demo::Entry *volatile kept[100];

int main()
{
	demo::Cache cache;
	demo::Buffer buffer;

	for (int i = 0; i < 100; i++)
		kept[i] = cache.insert(i);
	for (int i = 0; i < 50; i++)
		buffer.fill(1000);
	return 0;
}
