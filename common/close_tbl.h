/*
 * common/close_tbl.h: why a client connection ended. One row per reason:
 *
 *     CT_CLOSE(NAME, is_err, status, "text")
 *
 * is_err: 1 if the close is an error worth a log line and an error counter.
 * status: the HTTP status to answer if no response byte has gone out yet
 *         (0: nothing is sent, the connection is just closed).
 * From this one table come enum ct_close, the per-worker close counters and
 * the log strings, so they cannot drift (Varnish include/tbl/sess_close.h).
 *
 * Include with CT_CLOSE defined; the file undefines nothing.
 */
/* clean ends */
CT_CLOSE(REM_CLOSE,      0,   0, "client closed the connection")
CT_CLOSE(RESP_DONE,      0,   0, "response complete, no keep-alive")
CT_CLOSE(IDLE_TIMEOUT,   0,   0, "keep-alive idle timeout")
CT_CLOSE(DRAIN,          0,   0, "server shutting down")
CT_CLOSE(TUNNEL_DONE,    0,   0, "upgraded tunnel closed")
/* the client's fault (this group, RX_BAD to TLS_HANDSHAKE, in this order:
 * ct_close_is_client) */
CT_CLOSE(RX_BAD,         1, 400, "malformed request")
CT_CLOSE(RX_TIMEOUT,     1, 408, "client request timeout")
CT_CLOSE(METHOD,         1, 405, "method not allowed on a reverse proxy")
CT_CLOSE(RX_ERROR,       1,   0, "client read error")
CT_CLOSE(TX_TIMEOUT,     1,   0, "client send timeout")
CT_CLOSE(TX_ERROR,       1,   0, "client write error")
CT_CLOSE(TLS_HANDSHAKE,  1,   0, "TLS handshake failed")
/* the origin's fault */
CT_CLOSE(NO_BACKEND,     1, 503, "no live backend")
CT_CLOSE(ORIGIN_CONNECT, 1, 502, "cannot connect to origin")
CT_CLOSE(ORIGIN_TLS,     1, 502, "TLS handshake with origin failed")
CT_CLOSE(ORIGIN_RESET,   1, 502, "origin closed the connection before a response")
CT_CLOSE(ORIGIN_BAD,     1, 502, "malformed response from origin")
CT_CLOSE(ORIGIN_TIMEOUT, 1, 504, "origin did not answer in time")
CT_CLOSE(ORIGIN_TRUNC,   1,   0, "origin closed mid-body, response truncated")
CT_CLOSE(ORIGIN_CUT,     1, 502, "origin closed mid-body before the response started")
/* ours */
CT_CLOSE(INTERNAL,       1, 500, "internal error")
