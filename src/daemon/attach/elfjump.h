/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Is a function only a jump to another one? An allocator's `operator
 * delete(void *)` is often compiled as `jmp free@plt` (jemalloc's is): a
 * probe on free sees that call already, and a probe on the delete as well
 * would only add traps. x86-64 only; elsewhere nothing is a thunk.
 */
#ifndef MEMTRACE_ELFJUMP_H
#define MEMTRACE_ELFJUMP_H

#include <stddef.h>
#include <stdint.h>

/*
 * Decoders of one instruction at vaddr (code holds len bytes from there),
 * after an optional endbr64. x86_jump_target: an unconditional direct jmp
 * (rel8 or rel32) gives its destination. x86_slot_jump: `jmp *disp(%rip)`
 * (a PLT stub, or a -fno-plt call site; a bnd prefix allowed) gives the
 * address of the slot it jumps through. Both return 0 for anything else.
 */
uint64_t x86_jump_target(const uint8_t *code, size_t len, uint64_t vaddr);
uint64_t x86_slot_jump(const uint8_t *code, size_t len, uint64_t vaddr);

struct elf_module;

/*
 * Does the function at vaddr in the ELF module m consist of one jump that
 * reaches callee: directly to callee_vaddr (callee's address in the same
 * file, 0 if it defines none), or through a PLT stub or GOT slot that the
 * dynamic linker binds to the symbol named callee? 1 yes, 0 no (or m is
 * NULL or not x86-64 code).
 */
int elf_is_jump_to(struct elf_module *m, uint64_t vaddr, const char *callee, uint64_t callee_vaddr);

#endif
