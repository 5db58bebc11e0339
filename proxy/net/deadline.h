/*
 * proxy/net/deadline.h: a connection's one deadline, kept lazily, as nginx
 * and Varnish keep theirs (HTTP/1 connections and HTTP/2 sessions alike).
 *
 * The timer is re-armed only when a new deadline comes before the time it
 * is set for; one that fires before the current deadline (which moved later
 * meanwhile) is set again for the rest (ct_deadline_due). A keep-alive
 * connection moves its deadline twice per request (idle, then head) without
 * touching the timer, which instead fires about once per timeout to find it
 * moved. Deadlines are read on the precise monotonic clock, so a timer
 * libevent fires early (it arms from the loop's cached time) is simply set
 * again. Embedded in its owner; worker thread only.
 */
#ifndef CT_PROXY_NET_DEADLINE_H
#define CT_PROXY_NET_DEADLINE_H

#include <stdbool.h>
#include <stdint.h>

struct event;
struct event_base;

struct ct_deadline {
    struct event *timer;
    uint64_t at_ms;       /* the deadline (monotonic ms); 0: none */
    uint64_t timer_at_ms; /* when the timer fires (0: not armed) */
};

/* The monotonic clock in milliseconds. */
uint64_t ct_now_ms(void);
/* CB(fd -1, EV_TIMEOUT, ARG) runs when the timer fires; it asks
 * ct_deadline_due() whether that is the deadline. */
void ct_deadline_init(struct ct_deadline *d, struct event_base *base,
                      void (*cb)(int, short, void *), void *arg);
void ct_deadline_fini(struct ct_deadline *d);
/* The deadline is MS from now (0: the next loop turn). */
void ct_deadline_set(struct ct_deadline *d, uint64_t ms);
/* No deadline: the timer stays armed, its firing is ignored. */
static inline void ct_deadline_clear(struct ct_deadline *d) { d->at_ms = 0; }
static inline bool ct_deadline_pending(const struct ct_deadline *d) { return d->at_ms != 0; }
/* In the timer's callback: true if the deadline has passed (it is cleared);
 * false if there is none or it moved later (the timer is set for the rest). */
bool ct_deadline_due(struct ct_deadline *d);

#endif /* CT_PROXY_NET_DEADLINE_H */
