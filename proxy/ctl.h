/*
 * proxy/ctl.h: `cachet ctl ...`, commands that talk to a running cachet
 * through its admin listener. Today one: `cachet ctl top`, the dashboard's
 * figures in a terminal (varnishstat-style), read from GET /stats.
 *
 *     cachet ctl top [--admin ADDR:PORT | -c FILE] [-i SECONDS] [-1|--once]
 *
 * Main thread of a short-lived process; blocking sockets, no event loop.
 */
#ifndef CT_CTL_H
#define CT_CTL_H

/* ARGV[0] is "ctl". Returns the process exit status: 0, 1 when the admin
 * listener cannot be read (said on stderr), 2 for a bad command line. */
int ct_ctl_main(int argc, char **argv);

#endif /* CT_CTL_H */
