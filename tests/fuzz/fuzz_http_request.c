/* tests/fuzz/fuzz_http_request.c: libFuzzer target for the request parser
 * (see fuzz_http_drive.h for the input layout and the checks). */
#include "tests/fuzz/fuzz_http_drive.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fz_one_input(CT_HTTP_REQUEST, data, size);
}
