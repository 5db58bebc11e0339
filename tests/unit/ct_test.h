/*
 * tests/unit/ct_test.h: the CUnit driver shared by every unit test binary.
 * A test file defines ct_test_register(), which adds its suites to the
 * registry; ct_test.c runs them all and exits non-zero on any failure.
 */
#ifndef CT_TEST_H
#define CT_TEST_H

#include <CUnit/Basic.h>
#include <CUnit/CUnit.h>

void ct_test_register(void);

/* Add a suite with its tests: CT_SUITE("name", {"test a", fn_a}, ...). */
#define CT_SUITE(name, ...)                                                    \
    do {                                                                       \
        static CU_TestInfo tests_[] = {__VA_ARGS__, CU_TEST_INFO_NULL};         \
        CU_pSuite s_ = CU_add_suite((name), NULL, NULL);                       \
        for (CU_TestInfo *t_ = tests_; t_->pName; t_++)                        \
            CU_add_test(s_, t_->pName, t_->pTestFunc);                         \
    } while (0)

#endif
