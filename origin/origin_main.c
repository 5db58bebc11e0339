/*
 * origin/origin_main.c: cachet-origin's command line, startup and shutdown.
 *
 *   cachet-origin [--port P] [--bind ADDR] [--root DIR] [--workers N]
 *                 [--delay MS] [--idle-timeout S] [--access-log FILE|-]
 *
 * The first line on stdout is exactly "listening on ADDR:PORT" (flushed), once
 * every listening socket is open. Bad flags: usage on stderr, exit 2. SIGTERM
 * or SIGINT: the workers stop, everything is freed (so ASan's leak check at
 * exit means something), exit 0.
 */
#include <event2/event.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/log.h"
#include "origin/origin_int.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: cachet-origin [--port P] [--bind ADDR] [--root DIR] [--workers N]\n"
               "                     [--delay MS] [--idle-timeout S] [--access-log FILE|-]\n"
               "  --port P         TCP port, 0 picks a free one (default 8081)\n"
               "  --bind ADDR      address to listen on (default 127.0.0.1)\n"
               "  --root DIR       serve files from DIR (default: built-in /1k /10k /100k /1m)\n"
               "  --workers N      worker threads (default: number of cores)\n"
               "  --delay MS       delay every response by MS milliseconds\n"
               "  --idle-timeout S close connections idle S seconds (default 60)\n"
               "  --access-log F   write an access log to F, or stdout with -\n");
}

static bool num_arg(const char *s, uint64_t min, uint64_t max, unsigned *out)
{
    uint64_t v;
    if (ct_str_to_u64(ct_str_c(s), max, &v) != CT_OK || v < min)
        return false;
    *out = (unsigned)v;
    return true;
}

/* Returns 0 when the options are good, 2 (and prints why) when not. */
static int parse_args(int argc, char **argv, struct ct_origin_opts *op)
{
    static const struct option longopts[] = {
        {"port", required_argument, NULL, 'p'},    {"bind", required_argument, NULL, 'b'},
        {"root", required_argument, NULL, 'r'},    {"workers", required_argument, NULL, 'w'},
        {"delay", required_argument, NULL, 'd'},   {"access-log", required_argument, NULL, 'l'},
        {"idle-timeout", required_argument, NULL, 'i'},
        {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0},
    };
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    *op = (struct ct_origin_opts){.bind = "127.0.0.1", .port = 8081, .idle_s = 60,
                                  .workers = cores > 0 ? (unsigned)CT_MIN(cores, 64) : 1};
    int ch;
    bool ok = true;
    while (ok && (ch = getopt_long(argc, argv, "p:b:r:w:d:i:l:h", longopts, NULL)) != -1) {
        switch (ch) {
        case 'p': ok = num_arg(optarg, 0, 65535, &op->port); break;
        case 'b': op->bind = optarg; break;
        case 'r': op->root = optarg; break;
        case 'w': ok = num_arg(optarg, 1, 256, &op->workers); break;
        case 'd': ok = num_arg(optarg, 0, CT_OPARAM_MAX_DELAY_MS, &op->delay_ms); break;
        case 'i': ok = num_arg(optarg, 1, 86400, &op->idle_s); break;
        case 'l': op->access_log = optarg; break;
        case 'h': usage(stdout); exit(0);
        default: ok = false; optarg = NULL; break;
        }
        if (!ok && optarg)
            fprintf(stderr, "cachet-origin: bad value for --%s: '%s'\n",
                    ch == 'p'   ? "port"
                    : ch == 'w' ? "workers"
                    : ch == 'i' ? "idle-timeout"
                                : "delay",
                    optarg);
    }
    if (ok && optind < argc) {
        fprintf(stderr, "cachet-origin: unexpected argument '%s'\n", argv[optind]);
        ok = false;
    }
    if (!ok) {
        usage(stderr);
        return 2;
    }
    return 0;
}

/* --root and --access-log; returns 0, or 2 with a message. */
static int open_files(struct ct_origin *o)
{
    if (o->opts.root) {
        o->root_fd = open(o->opts.root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        o->root_real = realpath(o->opts.root, NULL);
        if (o->root_fd < 0 || !o->root_real) {
            fprintf(stderr, "cachet-origin: --root %s: %s\n", o->opts.root, strerror(errno));
            return 2;
        }
    }
    if (o->opts.access_log) {
        if (strcmp(o->opts.access_log, "-") == 0) {
            o->access_fd = STDOUT_FILENO;
        } else {
            o->access_fd =
                open(o->opts.access_log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
            if (o->access_fd < 0) {
                fprintf(stderr, "cachet-origin: --access-log %s: %s\n", o->opts.access_log,
                        strerror(errno));
                return 2;
            }
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    struct ct_origin o = {.root_fd = -1, .access_fd = -1};
    char announce[96], err[256];
    int rc = parse_args(argc, argv, &o.opts);
    if (rc == 0)
        rc = open_files(&o);
    if (rc != 0) {
        ct_origin_free(&o);
        return rc;
    }
    /* Block the stop signals before any thread exists, so every worker
     * inherits the mask and only sigwait() in this thread sees them. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);

    o.no_openat2 = getenv("CT_ORIGIN_NO_OPENAT2") != NULL;
    o.start = (time_t)ct_time_real();
    atomic_init(&o.seq, 0);
    ct_opattern_init();
    ct_obuiltin_init(o.start);
    if (ct_origin_listen(&o, announce, sizeof(announce), err, sizeof(err)) != CT_OK) {
        CT_ERR("listening on %s:%u: %s", o.opts.bind, o.opts.port, err);
        ct_origin_free(&o);
        return 1;
    }
    printf("listening on %s\n", announce);
    fflush(stdout);
    rc = ct_origin_run(&o, &stop);
    ct_origin_free(&o);
    libevent_global_shutdown();
    return rc == CT_OK ? 0 : 1;
}
