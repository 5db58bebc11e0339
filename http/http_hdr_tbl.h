/*
 * http/http_hdr_tbl.h: the header table. One row per header any module acts
 * on: CT_HDR(ID, "Canonical-Name", flags). Generated from it: enum ct_hdr_id,
 * the name lookup, and the flag queries. Add a row here rather than comparing
 * a name anywhere else.
 */
#define CT_HDR_TABLE(X)                                                          \
    X(ACCEPT_ENCODING, "Accept-Encoding", CT_HDRF_LIST)                          \
    X(ACCEPT_RANGES, "Accept-Ranges", CT_HDRF_LIST)                              \
    X(AGE, "Age", CT_HDRF_SINGLE | CT_HDRF_PER_HIT)                              \
    X(ALT_SVC, "Alt-Svc", CT_HDRF_LIST)                                          \
    X(AUTHORIZATION, "Authorization", CT_HDRF_SINGLE)                            \
    X(CACHE_CONTROL, "Cache-Control", CT_HDRF_LIST)                              \
    X(CACHE_STATUS, "Cache-Status", CT_HDRF_LIST | CT_HDRF_PER_HIT)              \
    X(CDN_CACHE_CONTROL, "CDN-Cache-Control", CT_HDRF_LIST | CT_HDRF_TARGETED_CC) \
    X(CONNECTION, "Connection", CT_HDRF_HOP | CT_HDRF_LIST | CT_HDRF_PER_HIT)    \
    X(CONTENT_ENCODING, "Content-Encoding", CT_HDRF_LIST)                        \
    X(CONTENT_LENGTH, "Content-Length", CT_HDRF_SINGLE | CT_HDRF_PINNED)         \
    X(CONTENT_LOCATION, "Content-Location", CT_HDRF_SINGLE)                      \
    X(CONTENT_RANGE, "Content-Range", CT_HDRF_SINGLE)                            \
    X(CONTENT_TYPE, "Content-Type", CT_HDRF_SINGLE)                              \
    X(COOKIE, "Cookie", 0)                                                       \
    X(DATE, "Date", CT_HDRF_SINGLE)                                              \
    X(ETAG, "ETag", CT_HDRF_SINGLE)                                              \
    X(EXPECT, "Expect", CT_HDRF_LIST)                                            \
    X(EXPIRES, "Expires", CT_HDRF_SINGLE)                                        \
    X(FORWARDED, "Forwarded", CT_HDRF_LIST)                                      \
    X(HOST, "Host", CT_HDRF_SINGLE | CT_HDRF_PINNED)                             \
    X(HTTP2_SETTINGS, "HTTP2-Settings", CT_HDRF_HOP | CT_HDRF_SINGLE)            \
    X(IF_MATCH, "If-Match", CT_HDRF_LIST)                                        \
    X(IF_MODIFIED_SINCE, "If-Modified-Since", CT_HDRF_SINGLE | CT_HDRF_CACHE_ANSWERS) \
    X(IF_NONE_MATCH, "If-None-Match", CT_HDRF_LIST | CT_HDRF_CACHE_ANSWERS)      \
    X(IF_RANGE, "If-Range", CT_HDRF_SINGLE | CT_HDRF_CACHE_ANSWERS)              \
    X(IF_UNMODIFIED_SINCE, "If-Unmodified-Since", CT_HDRF_SINGLE)                \
    X(KEEP_ALIVE, "Keep-Alive", CT_HDRF_HOP | CT_HDRF_LIST)                      \
    X(LAST_MODIFIED, "Last-Modified", CT_HDRF_SINGLE)                            \
    X(LOCATION, "Location", CT_HDRF_SINGLE)                                      \
    X(PRAGMA, "Pragma", CT_HDRF_LIST)                                            \
    X(PROXY_AUTHENTICATE, "Proxy-Authenticate", CT_HDRF_HOP)                     \
    X(PROXY_AUTHORIZATION, "Proxy-Authorization", CT_HDRF_HOP)                   \
    X(PROXY_CONNECTION, "Proxy-Connection", CT_HDRF_HOP)                         \
    X(RANGE, "Range", CT_HDRF_SINGLE | CT_HDRF_CACHE_ANSWERS)                    \
    X(SERVER, "Server", 0)                                                       \
    X(SET_COOKIE, "Set-Cookie", 0)                                               \
    X(TE, "TE", CT_HDRF_HOP | CT_HDRF_LIST)                                      \
    X(TRAILER, "Trailer", CT_HDRF_HOP | CT_HDRF_LIST)                            \
    X(TRANSFER_ENCODING, "Transfer-Encoding", CT_HDRF_HOP | CT_HDRF_LIST)        \
    X(UPGRADE, "Upgrade", CT_HDRF_HOP | CT_HDRF_LIST)                            \
    X(USER_AGENT, "User-Agent", 0)                                               \
    X(VARY, "Vary", CT_HDRF_LIST)                                                \
    X(VIA, "Via", CT_HDRF_LIST)                                                  \
    X(WWW_AUTHENTICATE, "WWW-Authenticate", 0)                                   \
    X(X_FORWARDED_FOR, "X-Forwarded-For", CT_HDRF_LIST)                          \
    X(X_FORWARDED_HOST, "X-Forwarded-Host", 0)                                   \
    X(X_FORWARDED_PROTO, "X-Forwarded-Proto", 0)
