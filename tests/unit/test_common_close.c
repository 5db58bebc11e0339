/* tests/unit/test_common_close.c: the close-reason accessors read the row of
 * close_tbl.h they were generated from. */
#include <stdlib.h>

#include "common/close.h"
#include "tests/unit/ct_test.h"

static void test_rows(void)
{
    CU_ASSERT_STRING_EQUAL(ct_close_name(CT_CLOSE_RX_TIMEOUT), "RX_TIMEOUT");
    CU_ASSERT_STRING_EQUAL(ct_close_text(CT_CLOSE_RX_TIMEOUT), "client request timeout");
    CU_ASSERT_EQUAL(ct_close_status(CT_CLOSE_RX_TIMEOUT), 408);
    CU_ASSERT_TRUE(ct_close_is_err(CT_CLOSE_RX_TIMEOUT));
    CU_ASSERT_EQUAL(ct_close_status(CT_CLOSE_ORIGIN_TIMEOUT), 504);
    CU_ASSERT_EQUAL(ct_close_status(CT_CLOSE_NO_BACKEND), 503);
    CU_ASSERT_FALSE(ct_close_is_err(CT_CLOSE_RESP_DONE));
    CU_ASSERT_EQUAL(ct_close_status(CT_CLOSE_RESP_DONE), 0);
    CU_ASSERT_STRING_EQUAL(ct_close_name(CT_CLOSE_REM_CLOSE), "REM_CLOSE");
    CU_ASSERT_STRING_EQUAL(ct_close_name(CT_CLOSE__COUNT - 1), "INTERNAL");
}

/* Every row, in table order, with its own columns: a table with a row out
 * of place or a column swapped fails here. */
static void test_every_row(void)
{
    static const struct {
        const char *name, *text;
        unsigned status;
        bool is_err;
    } want[] = {
#define CT_CLOSE(name, is_err, status, text) {#name, text, status, is_err},
#include "common/close_tbl.h"
#undef CT_CLOSE
    };
    CU_ASSERT_EQUAL_FATAL(CT_ARRAY_LEN(want), CT_CLOSE__COUNT);
    for (unsigned i = 0; i < CT_CLOSE__COUNT; i++) {
        CU_ASSERT_STRING_EQUAL(ct_close_name((enum ct_close)i), want[i].name);
        CU_ASSERT_STRING_EQUAL(ct_close_text((enum ct_close)i), want[i].text);
        CU_ASSERT_EQUAL(ct_close_status((enum ct_close)i), want[i].status);
        CU_ASSERT_EQUAL(ct_close_is_err((enum ct_close)i), want[i].is_err);
        /* an error-free close never answers with a status */
        if (!want[i].is_err)
            CU_ASSERT_EQUAL(want[i].status, 0);
    }
}

void ct_test_register(void)
{
    CT_SUITE("common close", {"named rows", test_rows}, {"every row", test_every_row});
}
