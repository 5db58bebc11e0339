/* common/close.c: the close-reason table, generated from close_tbl.h. */
#include "common/close.h"

const struct ct_close_row ct_close_tbl[CT_CLOSE__COUNT] = {
#define CT_CLOSE(name, is_err, status, text) [CT_CLOSE_##name] = {#name, text, status, is_err},
#include "common/close_tbl.h"
#undef CT_CLOSE
};
