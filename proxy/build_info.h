/*
 * proxy/build_info.h: what `cachet -V` prints (nginx -V, haproxy -vv): the
 * version, the git revision, the compiler and build options, and for every
 * library the version cachet was compiled against beside the one the
 * dynamic linker gave it at run time (a library upgraded under a running
 * binary shows here). Main thread; no state.
 */
#ifndef CT_PROXY_BUILD_INFO_H
#define CT_PROXY_BUILD_INFO_H

#include <stdio.h>

/* "0.1.0": the project's version (CMakeLists.txt's project(), which
 * debian/changelog repeats). Static storage. */
const char *ct_build_version(void);

/* Print the build report to FP, one "name: value" line each. */
void ct_build_info_print(FILE *fp);

#endif
