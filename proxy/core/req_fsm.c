/*
 * proxy/core/req_fsm.c: the loop that runs a request's steps (req_step.h).
 */
#include "proxy/core/req_step.h"

#include <stdio.h>

#include "proxy/core/core.h"

static enum ct_req_next (*const step_fn[CT_STEP__N])(struct ct_req *) = {
#define CT_REQ_STEP_FN(name, fn, what) [CT_STEP_##name] = ct_step_##fn,
    CT_REQ_STEPS(CT_REQ_STEP_FN)
#undef CT_REQ_STEP_FN
};

static const char *const step_names[CT_STEP__N] = {
    [CT_STEP_NONE] = "none",
#define CT_REQ_STEP_NAME(name, fn, what) [CT_STEP_##name] = #fn,
    CT_REQ_STEPS(CT_REQ_STEP_NAME)
#undef CT_REQ_STEP_NAME
};

_Static_assert(CT_STEP__N <= 16, "a step must fit in the trail's 4 bits");

const char *ct_req_step_name(enum ct_req_step step)
{
    return (unsigned)step < CT_STEP__N ? step_names[step] : "?";
}

void ct_req_run(struct ct_req *r)
{
    CT_CHECK_OBJ(r, CT_REQ_MAGIC);
    /* Each step either moves R on (MORE) or stops the loop; a step that
     * stops it may have ended R, so R is read again only after MORE. */
    CT_ASSERT(r->step != CT_STEP_NONE);
    while (step_fn[r->step](r) == CT_REQ_MORE)
        ;
}

const char *ct_req_trail(const struct ct_req *r, char *buf, unsigned cap)
{
    unsigned n = 0;
    if (cap == 0)
        return buf;
    buf[0] = '\0';
    for (unsigned i = 16; i-- > 0 && n + 1 < cap;) {
        unsigned step = (unsigned)(r->trail >> (4 * i) & 0xf);
        if (step == CT_STEP_NONE)
            continue; /* not recorded yet */
        int k = snprintf(buf + n, cap - n, "%s%s", n ? " " : "",
                         ct_req_step_name((enum ct_req_step)step));
        if (k < 0)
            break;
        n += (unsigned)k;
    }
    return buf;
}
