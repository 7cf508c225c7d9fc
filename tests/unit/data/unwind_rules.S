/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * One function per kind of call frame rule the unwind table builder meets
 * (tests/unit/test_unwind.c). Built into the committed unwind_rules.so (CFI
 * in .eh_frame) and, with -DDEBUG_FRAME, into unwind_debug.so (no CFI) plus
 * unwind_debug.debug (its .debug_frame): `make unwind-test-data`. Labels
 * name the addresses the test checks.
 */
#ifdef DEBUG_FRAME
	.cfi_sections .debug_frame
#endif
	.text
	.globl f_rsp, f_rsp_body, f_rsp_end
	.type f_rsp, @function
f_rsp:				/* push rbx; sub 24: CFA = rsp + 40 */
	.cfi_startproc
	push %rbx
	.cfi_adjust_cfa_offset 8
	.cfi_offset %rbx, -16
	sub $24, %rsp
	.cfi_adjust_cfa_offset 24
f_rsp_body:
	call f_rbp
	add $24, %rsp
	.cfi_adjust_cfa_offset -24
	pop %rbx
	.cfi_adjust_cfa_offset -8
f_rsp_end:
	ret
	.cfi_endproc
	.size f_rsp, .-f_rsp

	.globl f_rbp, f_rbp_body
	.type f_rbp, @function
f_rbp:				/* frame pointer: CFA = rbp + 16, rbp at CFA - 16 */
	.cfi_startproc
	push %rbp
	.cfi_def_cfa_offset 16
	.cfi_offset %rbp, -16
	mov %rsp, %rbp
	.cfi_def_cfa_register %rbp
f_rbp_body:
	call f_root
	pop %rbp
	.cfi_def_cfa %rsp, 8
	ret
	.cfi_endproc
	.size f_rbp, .-f_rbp

	.globl f_nocfi, f_nocfi_end
	.type f_nocfi, @function
f_nocfi:			/* no FDE: the frame-pointer step */
	nop
	nop
	nop
	nop
f_nocfi_end:
	ret
	.size f_nocfi, .-f_nocfi

	.globl f_root, f_root_body
	.type f_root, @function
f_root:				/* the return address undefined: outermost */
	.cfi_startproc
	.cfi_undefined %rip
	xor %ebp, %ebp
f_root_body:
	call f_nocfi
	hlt
	.cfi_endproc
	.size f_root, .-f_root

	.globl f_drap, f_drap_body
	.type f_drap, @function
f_drap:				/* stack realigned (GCC's DRAP): CFA = *(rbp - 8), rbp at *(rbp) */
	.cfi_startproc
	lea 8(%rsp), %r10
	.cfi_def_cfa %r10, 0
	and $-32, %rsp
	push -8(%r10)
	push %rbp
	mov %rsp, %rbp
	.cfi_escape 0x10, 0x06, 0x02, 0x76, 0x00	/* DW_CFA_expression rbp: breg6 0 */
	push %r10
	.cfi_escape 0x0f, 0x03, 0x76, 0x78, 0x06	/* DW_CFA_def_cfa_expression: breg6 -8; deref */
f_drap_body:
	call f_rsp
	pop %r10
	.cfi_def_cfa %r10, 0
	pop %rbp
	lea -8(%r10), %rsp
	.cfi_def_cfa %rsp, 8
	ret
	.cfi_endproc
	.size f_drap, .-f_drap

	.globl f_signal, f_signal_body
	.type f_signal, @function
f_signal:			/* a signal frame: the walker stops */
	.cfi_startproc
	.cfi_signal_frame
	nop
f_signal_body:
	nop
	ret
	.cfi_endproc
	.size f_signal, .-f_signal

	.globl f_restore_rt
	.type f_restore_rt, @function
	/* the kernel's signal frame, as glibc describes its __restore_rt: the
	 * interrupted rsp at rsp + 160, rip at rsp + 168, rbp at rsp + 120 */
	.cfi_startproc
	.cfi_signal_frame
	.cfi_escape 0x0f, 0x04, 0x77, 0xa0, 0x01, 0x06	/* def_cfa_expression: breg7 160; deref */
	.cfi_escape 0x10, 0x06, 0x03, 0x77, 0xf8, 0x00	/* expression rbp: breg7 120 */
	.cfi_escape 0x10, 0x10, 0x03, 0x77, 0xa8, 0x01	/* expression rip: breg7 168 */
	nop
f_restore_rt:
	mov $15, %rax
	syscall
	.cfi_endproc
	.size f_restore_rt, .-f_restore_rt

	.globl f_expr, f_expr_body
	.type f_expr, @function
f_expr:				/* CFA by an expression the rows cannot hold: stop */
	.cfi_startproc
	nop
	.cfi_escape 0x0f, 0x04, 0x77, 0x08, 0x06, 0x06	/* breg7 8; deref; deref */
f_expr_body:
	nop
	ret
	.cfi_endproc
	.size f_expr, .-f_expr

	.globl f_big, f_big_body
	.type f_big, @function
f_big:				/* a frame of 320 KiB: past what a row holds, stop */
	.cfi_startproc
	sub $0x50000, %rsp
	.cfi_adjust_cfa_offset 0x50000
f_big_body:
	nop
	add $0x50000, %rsp
	.cfi_adjust_cfa_offset -0x50000
	ret
	.cfi_endproc
	.size f_big, .-f_big

	.globl f_plt, f_plt_body
	.type f_plt, @function
	.p2align 4
f_plt:				/* the lazy PLT's CFA expression */
	.cfi_startproc
	.cfi_escape 0x0f, 0x0b, 0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22
	push $0
f_plt_body:
	jmp f_rsp
	nop
	.cfi_endproc
	.size f_plt, .-f_plt
	.section .note.GNU-stack, "", @progbits
