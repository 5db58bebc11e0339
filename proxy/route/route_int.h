/*
 * proxy/route/route_int.h: shared inside proxy/route/ only.
 */
#ifndef CT_ROUTE_INT_H
#define CT_ROUTE_INT_H

#include "proxy/route/route.h"

/* TEXT (checked by conf/conf_route.c: every '$' starts a variable) compiled
 * into literal pieces and variables. New; ct_route_tpl_free() frees it. */
struct ct_route_tpl *ct_route_tpl_compile(const char *text);
void ct_route_tpl_free(struct ct_route_tpl *t);

/* HOST lower-cased into BUF[0..CAP) without a port or a trailing dot; the
 * length, or 0 when it names nothing (empty, or longer than CAP). */
size_t ct_route_host_norm(struct ct_str host, char *buf, size_t cap);

#endif /* CT_ROUTE_INT_H */
