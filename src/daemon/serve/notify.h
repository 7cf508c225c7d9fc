/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Readiness for service managers: systemd's Type=notify protocol, which is one
 * datagram "READY=1" to the Unix socket named by $NOTIFY_SOCKET. Written by hand
 * (about 40 lines) so that memtraced needs no libsystemd; see docs/packaging.md.
 */
#ifndef MEMTRACE_NOTIFY_H
#define MEMTRACE_NOTIFY_H

/* Tell the service manager, if any, that memtraced serves its socket now.
 * Without $NOTIFY_SOCKET this does nothing; a failure is logged, not fatal.
 * Clears $NOTIFY_SOCKET so that no process started later inherits it. */
void notify_ready(void);

#endif
