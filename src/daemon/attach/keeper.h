/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The BPF programs stop a process (SIGSTOP) until the daemon has placed its
 * probes: a --comm/--exe match at its exec, a target's new program at its
 * exec and in its ld.so. A daemon killed in that window would leave the
 * process stopped for good; the keeper is a small process forked at start
 * that holds only the BPF map of stopped pids and a pipe from the daemon.
 * When the pipe closes (the daemon exited or was killed), it sends SIGCONT
 * to every pid still in the map, then exits.
 */
#ifndef MEMTRACE_KEEPER_H
#define MEMTRACE_KEEPER_H

/*
 * Fork the keeper for the hash map at map_fd (keys: pids, 4 bytes). Returns
 * the pipe's write end (close-on-exec; the daemon keeps it open and never
 * writes), or -1 with errno set.
 */
int keeper_start(int map_fd);

#endif
