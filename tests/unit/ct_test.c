/* tests/unit/ct_test.c: main() for every unit test binary. */
#include "tests/unit/ct_test.h"

#include <stdio.h>
#include <stdlib.h>

int main(void)
{
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 2;
    ct_test_register();
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned failed = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
    unsigned ran = CU_get_number_of_tests_run();
    CU_cleanup_registry();
    if (ran == 0) {
        fprintf(stderr, "no test ran\n");
        return 2;
    }
    return failed ? 1 : 0;
}
