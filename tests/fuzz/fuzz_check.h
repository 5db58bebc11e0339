/*
 * tests/fuzz/fuzz_check.h: FUZZ_CHECK(cond), shared by the fuzz targets: a
 * broken property aborts, so libFuzzer keeps the input like a crash.
 */
#ifndef CT_FUZZ_CHECK_H
#define CT_FUZZ_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define FUZZ_CHECK(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz check failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__);         \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

#endif /* CT_FUZZ_CHECK_H */
