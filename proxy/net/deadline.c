/*
 * proxy/net/deadline.c: a connection's lazily kept deadline (deadline.h).
 */
#include <event2/event.h>

#include "common/common.h"
#include "proxy/net/deadline.h"

uint64_t ct_now_ms(void) { return (uint64_t)(ct_time_mono() * 1000.0); }

static void arm(struct ct_deadline *d, uint64_t ms)
{
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)((ms % 1000) * 1000)};
    evtimer_add(d->timer, &tv);
    d->timer_at_ms = d->at_ms;
}

void ct_deadline_init(struct ct_deadline *d, struct event_base *base,
                      void (*cb)(int, short, void *), void *arg)
{
    *d = (struct ct_deadline){.timer = evtimer_new(base, cb, arg)};
    CT_ASSERT(d->timer != NULL);
}

void ct_deadline_fini(struct ct_deadline *d)
{
    if (d->timer)
        event_free(d->timer);
    d->timer = NULL;
}

void ct_deadline_set(struct ct_deadline *d, uint64_t ms)
{
    d->at_ms = ct_now_ms() + ms;
    if (d->at_ms == 0)
        d->at_ms = 1; /* 0 means none */
    if (d->timer_at_ms != 0 && d->timer_at_ms <= d->at_ms)
        return; /* fires first: ct_deadline_due sets it again for the rest */
    arm(d, ms);
}

bool ct_deadline_due(struct ct_deadline *d)
{
    d->timer_at_ms = 0;
    if (d->at_ms == 0)
        return false; /* left armed through a time without a deadline */
    uint64_t now = ct_now_ms();
    if (now < d->at_ms) { /* the deadline moved later since it was armed */
        arm(d, d->at_ms - now);
        return false;
    }
    d->at_ms = 0;
    return true;
}
