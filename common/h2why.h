/*
 * common/h2why.h: why an HTTP/2 connection ends, one X-macro table read by
 * the HTTP/2 engine (proxy/h2: GOAWAY codes, log text) and by the counters
 * (proxy/stats: cachet_h2_connections_ended{why}), which sit below it.
 */
#ifndef CT_COMMON_H2WHY_H
#define CT_COMMON_H2WHY_H

/* Why a connection ends: counters by reason, log text. CT_H2_WHY(ID, code, text):
 * CODE is the HTTP/2 error code of our GOAWAY. */
#define CT_H2_WHY_TABLE(X)                                                                         \
    X(NONE, 0x0, "open")                                                                           \
    X(DRAIN, 0x0, "graceful drain")                                                                \
    X(PEER_GOAWAY, 0x0, "the client sent GOAWAY")                                                  \
    X(PREFACE, 0x1, "bad connection preface")                                                      \
    X(PROTOCOL, 0x1, "protocol error")                                                             \
    X(STREAM_CLOSED, 0x5, "a frame on a stream the client had ended")                              \
    X(FLOW_CONTROL, 0x3, "flow control error")                                                     \
    X(FRAME_SIZE, 0x6, "frame size error")                                                         \
    X(COMPRESSION, 0x9, "HPACK decoding error")                                                    \
    X(ACK_FLOOD, 0xb, "SETTINGS/PING flood: too many ACKs queued")                                 \
    X(CONTINUATION_FLOOD, 0xb, "CONTINUATION flood")                                               \
    X(RAPID_RESET, 0xb, "streams reset faster than the budget")                                    \
    X(EMPTY_FRAMES, 0xb, "empty frames faster than the budget")                                    \
    X(INTERNAL, 0x2, "internal error")

enum ct_h2_why {
#define CT_H2_WHY_ENUM(id, code, text) CT_H2_WHY_##id,
    CT_H2_WHY_TABLE(CT_H2_WHY_ENUM)
#undef CT_H2_WHY_ENUM
        CT_H2_WHY__COUNT
};

#endif /* CT_COMMON_H2WHY_H */
