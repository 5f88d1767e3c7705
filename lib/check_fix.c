/*
 * check_fix.c: applying fixes (-p, -y). Filled in by the fix step.
 */
#include "check.h"

errcode_t chk_apply_fixes(struct chk_ctx *ctx)
{
	(void)ctx;
	return 0;
}
