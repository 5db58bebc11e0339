/*
 * common/list.h: intrusive doubly linked lists, in the spirit of Varnish's
 * VTAILQ (include/vqueue.h) and h2o's linklist.h.
 *
 * The element embeds its link; the list owns nothing. A head knows its first
 * and last element, so both ends are O(1), and every link is typed, so
 * putting a struct ct_obj on a list of struct ct_oconn is a compile error.
 * Both ends are NULL-terminated (not circular): a zeroed head is an empty
 * list, so heads inside calloc'ed structs need no init call, and "prev ==
 * NULL" means "first".
 *
 *     struct conn { CT_LIST_LINK(conn) link; ... };
 *     struct worker { CT_LIST_HEAD(conn) conns; ... };
 *
 *     CT_LIST_INSERT_HEAD(&w->conns, c, link);
 *     CT_LIST_FOREACH_SAFE(c, &w->conns, link, tmp)
 *         if (idle(c))
 *             CT_LIST_REMOVE(&w->conns, c, link);   (safe: tmp holds the next)
 *
 * CT_HLIST_HEAD is the same list with a head of one pointer (first only),
 * for heads that are many and small (one per cache object, one per tag) and
 * never need the last element: insert at the head or after an element,
 * remove. FIRST, EMPTY, NEXT, PREV and the forward FOREACH forms work on
 * either kind of head; use the CT_HLIST_ insert/remove forms on an hlist.
 *
 * Rules: an element is on at most one list per link field; REMOVE it from
 * the list it is on (nothing checks which); REMOVE clears the element's link,
 * so CT_LIST_IS_UNLINKED() tells a removed element from one in the middle of
 * a list (the sole element of a list also reads as unlinked: compare with
 * CT_LIST_FIRST to tell those apart). Arguments are evaluated more than once:
 * pass plain variables. No locking: whoever guards the head guards the links.
 */
#ifndef CT_LIST_H
#define CT_LIST_H

#include <stddef.h>

#define CT_LIST_HEAD(type)                                                     \
    struct {                                                                   \
        struct type *first, *last;                                             \
    }
#define CT_LIST_LINK(type)                                                     \
    struct {                                                                   \
        struct type *next, *prev;                                              \
    }

#define CT_LIST_INIT(h) ((h)->first = (h)->last = NULL)
#define CT_LIST_EMPTY(h) ((h)->first == NULL)
#define CT_LIST_FIRST(h) ((h)->first)
#define CT_LIST_LAST(h) ((h)->last)
#define CT_LIST_NEXT(e, f) ((e)->f.next)
#define CT_LIST_PREV(e, f) ((e)->f.prev)
#define CT_LIST_IS_UNLINKED(e, f) ((e)->f.next == NULL && (e)->f.prev == NULL)

/* ---- the links: shared by both kinds of head ------------------------------
 * The CT_HLIST_ forms maintain first only; the CT_LIST_ forms add last. */

#define CT_HLIST_HEAD(type)                                                    \
    struct {                                                                   \
        struct type *first;                                                    \
    }

#define CT_HLIST_INSERT_HEAD(h, e, f)                                          \
    do {                                                                       \
        (e)->f.prev = NULL;                                                    \
        (e)->f.next = (h)->first;                                              \
        if ((h)->first)                                                        \
            (h)->first->f.prev = (e);                                          \
        (h)->first = (e);                                                      \
    } while (0)

/* E goes right after LE, which is on H. */
#define CT_HLIST_INSERT_AFTER(h, le, e, f)                                     \
    do {                                                                       \
        (e)->f.prev = (le);                                                    \
        (e)->f.next = (le)->f.next;                                            \
        if ((le)->f.next)                                                      \
            (le)->f.next->f.prev = (e);                                        \
        (le)->f.next = (e);                                                    \
    } while (0)

#define CT_HLIST_REMOVE(h, e, f)                                               \
    do {                                                                       \
        if ((e)->f.prev)                                                       \
            (e)->f.prev->f.next = (e)->f.next;                                 \
        else                                                                   \
            (h)->first = (e)->f.next;                                          \
        if ((e)->f.next)                                                       \
            (e)->f.next->f.prev = (e)->f.prev;                                 \
        (e)->f.next = (e)->f.prev = NULL;                                      \
    } while (0)

#define CT_LIST_INSERT_HEAD(h, e, f)                                           \
    do {                                                                       \
        if ((h)->first == NULL)                                                \
            (h)->last = (e);                                                   \
        CT_HLIST_INSERT_HEAD(h, e, f);                                         \
    } while (0)

/* E goes right after LE, which is on H. */
#define CT_LIST_INSERT_AFTER(h, le, e, f)                                      \
    do {                                                                       \
        if ((le)->f.next == NULL)                                              \
            (h)->last = (e);                                                   \
        CT_HLIST_INSERT_AFTER(h, le, e, f);                                    \
    } while (0)

#define CT_LIST_REMOVE(h, e, f)                                                \
    do {                                                                       \
        if ((e)->f.next == NULL)                                               \
            (h)->last = (e)->f.prev;                                           \
        CT_HLIST_REMOVE(h, e, f);                                              \
    } while (0)

#define CT_LIST_INSERT_TAIL(h, e, f)                                           \
    do {                                                                       \
        (e)->f.next = NULL;                                                    \
        (e)->f.prev = (h)->last;                                               \
        if ((h)->last)                                                         \
            (h)->last->f.next = (e);                                           \
        else                                                                   \
            (h)->first = (e);                                                  \
        (h)->last = (e);                                                       \
    } while (0)

/* E goes right before LE, which is on H. */
#define CT_LIST_INSERT_BEFORE(h, le, e, f)                                     \
    do {                                                                       \
        (e)->f.next = (le);                                                    \
        (e)->f.prev = (le)->f.prev;                                            \
        if ((le)->f.prev)                                                      \
            (le)->f.prev->f.next = (e);                                        \
        else                                                                   \
            (h)->first = (e);                                                  \
        (le)->f.prev = (e);                                                    \
    } while (0)

/* ---- walking ------------------------------------------------------------ */

/* Visit first to last. The body must not remove V (use the _SAFE form). */
#define CT_LIST_FOREACH(v, h, f) for ((v) = (h)->first; (v); (v) = (v)->f.next)
#define CT_LIST_FOREACH_REVERSE(v, h, f) for ((v) = (h)->last; (v); (v) = (v)->f.prev)
/* The body may remove (or free) V; T is a spare variable of V's type. */
#define CT_LIST_FOREACH_SAFE(v, h, f, t)                                       \
    for ((v) = (h)->first; (v) && ((t) = (v)->f.next, 1); (v) = (t))
#define CT_LIST_FOREACH_REVERSE_SAFE(v, h, f, t)                               \
    for ((v) = (h)->last; (v) && ((t) = (v)->f.prev, 1); (v) = (t))

#endif /* CT_LIST_H */
