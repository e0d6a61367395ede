/* Context save/resume (see context.h): callee-saved registers, stack and instruction pointer,
 * and the SSE/x87 control words, which the ABI also treats as callee-saved. */
#include "mana/thread_context.h"

#include <stddef.h>

_Static_assert(offsetof(struct mana_context, rsp) == 48, "layout used by the assembly below");
_Static_assert(offsetof(struct mana_context, rip) == 56, "layout used by the assembly below");
_Static_assert(offsetof(struct mana_context, mxcsr) == 64, "layout used by the assembly below");
_Static_assert(offsetof(struct mana_context, fpu_cw) == 68, "layout used by the assembly below");

__asm__(".text\n"
        ".globl mana_context_save\n"
        ".type mana_context_save, @function\n"
        "mana_context_save:\n"
        "  mov %rbx, 0(%rdi)\n"
        "  mov %rbp, 8(%rdi)\n"
        "  mov %r12, 16(%rdi)\n"
        "  mov %r13, 24(%rdi)\n"
        "  mov %r14, 32(%rdi)\n"
        "  mov %r15, 40(%rdi)\n"
        "  lea 8(%rsp), %rdx\n" /* the caller's %rsp after our return */
        "  mov %rdx, 48(%rdi)\n"
        "  mov (%rsp), %rdx\n" /* our return address */
        "  mov %rdx, 56(%rdi)\n"
        "  stmxcsr 64(%rdi)\n"
        "  fnstcw 68(%rdi)\n"
        "  xor %eax, %eax\n"
        "  ret\n"
        ".size mana_context_save, .-mana_context_save\n"
        ".globl mana_context_resume\n"
        ".type mana_context_resume, @function\n"
        "mana_context_resume:\n"
        "  mov 0(%rdi), %rbx\n"
        "  mov 8(%rdi), %rbp\n"
        "  mov 16(%rdi), %r12\n"
        "  mov 24(%rdi), %r13\n"
        "  mov 32(%rdi), %r14\n"
        "  mov 40(%rdi), %r15\n"
        "  ldmxcsr 64(%rdi)\n"
        "  fldcw 68(%rdi)\n"
        "  mov 48(%rdi), %rsp\n"
        "  mov $1, %eax\n"
        "  jmp *56(%rdi)\n"
        ".size mana_context_resume, .-mana_context_resume\n");
