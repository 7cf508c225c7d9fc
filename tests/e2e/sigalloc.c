// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Allocations made in a signal handler (raise() from main, 5 times): the
 * DWARF walker goes through the kernel's signal frame (libc's __restore_rt,
 * whose call frame information says where the interrupted registers are)
 * to raise and main. 5 blocks of 777 bytes.
 */
#include <signal.h>
#include <stdlib.h>

void *volatile kept[8];
static volatile int count;

__attribute__((noinline)) static void on_signal(int sig)
{
	kept[count++ & 7] = malloc(777);
	(void)sig;
}

int main(void)
{
	signal(SIGUSR1, on_signal);
	for (int i = 0; i < 5; i++)
		raise(SIGUSR1);
	return 0;
}
