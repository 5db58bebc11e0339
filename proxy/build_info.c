/*
 * proxy/build_info.c: `cachet -V` (proxy/build_info.h). Each library line is
 * "built with X, running with Y": X from the library's header (or, where
 * the header has no version, from pkg-config when CMake configured the
 * build), Y from the library's own version call. hiredis and libconfig
 * have no version call, so their run-time column says so instead of
 * repeating the header. The values are read once at the call; nothing is
 * kept.
 */
#include <brotli/decode.h>
#include <brotli/encode.h>
#include <event2/event.h>
#include <hiredis/hiredis.h>
#include <http_parser.h>
#include <libconfig.h>
#include <nghttp2/nghttp2.h>
#include <openssl/crypto.h>
#include <openssl/opensslv.h>
#include <gnu/libc-version.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>
#ifdef CT_HAVE_JEMALLOC
#include <jemalloc/jemalloc.h>
#endif
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "proxy/build_info.h"
#include "ct_gitrev.h" /* generated at every build: cmake/gitrev.cmake */

#define STR_(x) #x
#define STR(x) STR_(x)

#if defined(__clang__)
#define CT_COMPILER "clang " __clang_version__
#elif defined(__GNUC__)
#define CT_COMPILER "gcc " __VERSION__
#else
#define CT_COMPILER "unknown"
#endif

const char *ct_build_version(void)
{
    return CT_VERSION;
}

/* Brotli's packed version: major << 24 | minor << 12 | patch. */
static void brotli_version(uint32_t v, char *buf, size_t len)
{
    snprintf(buf, len, "%u.%u.%u", v >> 24, (v >> 12) & 0xfff, v & 0xfff);
}

static void lib(FILE *fp, const char *name, const char *built, const char *running)
{
    fprintf(fp, "  %-12s built with %-16s running with %s\n", name, built, running);
}

void ct_build_info_print(FILE *fp)
{
    char run[128], dec[32], enc[32], pcre_run[64];
    fprintf(fp, "cachet %s\n", CT_VERSION);
    fprintf(fp, "git revision: %s\n", CT_GIT_REV);
    fprintf(fp, "compiler: %s\n", CT_COMPILER);
    fprintf(fp, "build: %s\n", CT_BUILD_OPTIONS);
    fprintf(fp, "libraries:\n");
    lib(fp, "glibc", STR(__GLIBC__) "." STR(__GLIBC_MINOR__), gnu_get_libc_version());
#ifdef CT_HAVE_JEMALLOC
    fprintf(fp, "  allocator    jemalloc %s\n", JEMALLOC_VERSION);
#else
    fprintf(fp, "  allocator    glibc malloc\n");
#endif
    lib(fp, "OpenSSL", OPENSSL_FULL_VERSION_STR, OpenSSL_version(OPENSSL_FULL_VERSION_STRING));
    lib(fp, "libevent", LIBEVENT_VERSION, event_get_version());
    lib(fp, "nghttp2", NGHTTP2_VERSION, nghttp2_version(0)->version_str);
    unsigned long hp = http_parser_version();
    snprintf(run, sizeof(run), "%lu.%lu.%lu", (hp >> 16) & 255, (hp >> 8) & 255, hp & 255);
    lib(fp, "http-parser",
        STR(HTTP_PARSER_VERSION_MAJOR) "." STR(HTTP_PARSER_VERSION_MINOR) "." STR(
            HTTP_PARSER_VERSION_PATCH),
        run);
    if (pcre2_config(PCRE2_CONFIG_VERSION, pcre_run) < 0)
        snprintf(pcre_run, sizeof(pcre_run), "?");
    else
        pcre_run[strcspn(pcre_run, " ")] = '\0'; /* "10.42 2022-12-11": the number */
    lib(fp, "PCRE2", STR(PCRE2_MAJOR) "." STR(PCRE2_MINOR), pcre_run);
    lib(fp, "zlib", ZLIB_VERSION, zlibVersion());
    brotli_version(BrotliDecoderVersion(), dec, sizeof(dec));
    brotli_version(BrotliEncoderVersion(), enc, sizeof(enc));
    snprintf(run, sizeof(run), "%s (decoder), %s (encoder)", dec, enc);
    lib(fp, "brotli", CT_BROTLI_BUILT, run);
    lib(fp, "zstd", ZSTD_VERSION_STRING, ZSTD_versionString());
    lib(fp, "hiredis", STR(HIREDIS_MAJOR) "." STR(HIREDIS_MINOR) "." STR(HIREDIS_PATCH),
        "? (the library has no version call)");
    lib(fp, "libconfig",
        STR(LIBCONFIG_VER_MAJOR) "." STR(LIBCONFIG_VER_MINOR) "." STR(LIBCONFIG_VER_REVISION),
        "? (the library has no version call)");
}
