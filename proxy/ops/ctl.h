/*
 * proxy/ops/ctl.h: `cachet ctl ...`, commands that talk to a running cachet
 * through its admin listener (as varnishadm does):
 *
 *     cachet ctl top [-i SECONDS] [-1|--once]     the dashboard's figures
 *     cachet ctl stats [--json]                   GET /stats, "name value" lines
 *     cachet ctl purge --tag T [--tag U] | --url URL | --prefix URL [--soft]
 *     cachet ctl ban [--soft] 'EXPR'              POST /ban
 *     cachet ctl bans                             GET /bans
 *     cachet ctl certs [--json]                   GET /certs: the ACME names
 *
 * each with [--admin ADDR:PORT | -c FILE] [--token-file FILE | --token TOKEN].
 *
 * Main thread of a short-lived process; blocking sockets, no event loop.
 */
#ifndef CT_CTL_H
#define CT_CTL_H

/* ARGV[0] is "ctl". Returns the process exit status: 0, 1 when the admin
 * listener cannot be read (said on stderr), 2 for a bad command line, 3 when
 * cachet refused the request (no or a wrong token, a bad ban expression, a
 * full ban list: the reason on stderr). */
int ct_ctl_main(int argc, char **argv);

#endif /* CT_CTL_H */
