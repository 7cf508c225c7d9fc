// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * C++ allocations whose stacks pass through code without frame pointers:
 * std::vector growth (operator new called from the vector's reallocation,
 * instantiated here) and std::string growth (operator new called from
 * libstdc++'s own basic_string::_M_create, through _M_mutate/_M_append).
 * Built without frame pointers by the Makefile (tests/nofp/). Counts the
 * allocations it causes (each capacity change is one) and prints
 * "vector N string M" at the end.
 */
#include <cstdio>
#include <string>
#include <vector>

static long vector_allocs, string_allocs;
volatile unsigned long sink;

__attribute__((noinline)) void grow_vector(std::vector<long> &v, int n)
{
	for (int i = 0; i < n; i++) {
		size_t cap = v.capacity();

		v.push_back(i);
		vector_allocs += v.capacity() != cap;
	}
}

__attribute__((noinline)) void grow_string(std::string &s, int n)
{
	for (int i = 0; i < n; i++) {
		size_t cap = s.capacity();

		s.append("0123456789abcdef");
		string_allocs += s.capacity() != cap;
	}
}

int main()
{
	for (int round = 0; round < 100; round++) {
		std::vector<long> v;
		std::string s;

		grow_vector(v, 1000);
		grow_string(s, 64);
		sink = sink + v.size() + s.size();
	}
	std::printf("vector %ld string %ld\n", vector_allocs, string_allocs);
	return 0;
}
