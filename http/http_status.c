/*
 * http/http_status.c: THE reason-phrase table (RFC 9110 §15), used by the
 * proxy's own answers and stored status lines, and by cachet-origin.
 *
 * A status line's reason phrase is informational (RFC 9112 §4: a client
 * SHOULD ignore it), so a code not listed gets "Unknown" rather than an
 * error. A switch over constants compiles to a jump table: no scan.
 */
#include "http/http.h"

#define CT_HTTP_STATUS_TABLE(X)                                                \
    X(100, "Continue")                                                         \
    X(101, "Switching Protocols")                                              \
    X(103, "Early Hints")                                                      \
    X(200, "OK")                                                               \
    X(201, "Created")                                                          \
    X(202, "Accepted")                                                         \
    X(203, "Non-Authoritative Information")                                    \
    X(204, "No Content")                                                       \
    X(205, "Reset Content")                                                    \
    X(206, "Partial Content")                                                  \
    X(300, "Multiple Choices")                                                 \
    X(301, "Moved Permanently")                                                \
    X(302, "Found")                                                            \
    X(303, "See Other")                                                        \
    X(304, "Not Modified")                                                     \
    X(307, "Temporary Redirect")                                               \
    X(308, "Permanent Redirect")                                               \
    X(400, "Bad Request")                                                      \
    X(401, "Unauthorized")                                                     \
    X(403, "Forbidden")                                                        \
    X(404, "Not Found")                                                        \
    X(405, "Method Not Allowed")                                               \
    X(406, "Not Acceptable")                                                   \
    X(407, "Proxy Authentication Required")                                    \
    X(408, "Request Timeout")                                                  \
    X(409, "Conflict")                                                         \
    X(410, "Gone")                                                             \
    X(411, "Length Required")                                                  \
    X(412, "Precondition Failed")                                              \
    X(413, "Content Too Large")                                                \
    X(414, "URI Too Long")                                                     \
    X(415, "Unsupported Media Type")                                           \
    X(416, "Range Not Satisfiable")                                            \
    X(417, "Expectation Failed")                                               \
    X(418, "I'm a teapot")                                                     \
    X(421, "Misdirected Request")                                              \
    X(422, "Unprocessable Content")                                            \
    X(426, "Upgrade Required")                                                 \
    X(428, "Precondition Required")                                            \
    X(429, "Too Many Requests")                                                \
    X(431, "Request Header Fields Too Large")                                  \
    X(500, "Internal Server Error")                                            \
    X(501, "Not Implemented")                                                  \
    X(502, "Bad Gateway")                                                      \
    X(503, "Service Unavailable")                                              \
    X(504, "Gateway Timeout")                                                  \
    X(505, "HTTP Version Not Supported")

const char *ct_http_status_reason(unsigned status)
{
    switch (status) {
#define CT_HTTP_STATUS_CASE(code, text)                                        \
    case code:                                                                 \
        return text;
        CT_HTTP_STATUS_TABLE(CT_HTTP_STATUS_CASE)
#undef CT_HTTP_STATUS_CASE
    }
    return "Unknown";
}
