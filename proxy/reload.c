/*
 * proxy/reload.c: SIGHUP. XXX: not written yet (#7): the signal is logged
 * and ignored, the running configuration stays.
 */
#include "common/log.h"
#include "proxy/ops_int.h"

void ct_ops_reload(struct ct_ops *ops)
{
    (void)ops;
    CT_WARN("SIGHUP: configuration reload is not available yet; the running configuration stays");
}

void ct_reload_free_retired(struct ct_ops *ops) { (void)ops; }
