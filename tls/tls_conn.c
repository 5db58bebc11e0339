/*
 * tls/tls_conn.c: per-connection questions (client certificate subject,
 * negotiated parameters, kTLS) and OpenSSL error reporting. No state: every
 * function works on the SSL it is given, from the thread that owns it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include <openssl/err.h>

#include "tls/tls_int.h"

int ct_tls_peer_subject(SSL *ssl, char *buf, size_t len)
{
    X509 *x = SSL_get0_peer_certificate(ssl);
    if (x == NULL)
        return CT_ENOENT;
    if (SSL_get_verify_result(ssl) != X509_V_OK)
        return CT_ETLS;
    BIO *mem = BIO_new(BIO_s_mem());
    if (mem == NULL)
        return CT_ETLS;
    /* RFC 2253 flags escape control and non-ASCII bytes (ESC_CTRL, ESC_MSB),
     * so the result is printable ASCII; checked again below because it goes
     * into a request header. */
    int rc = CT_ETLS;
    char *p = NULL;
    if (X509_NAME_print_ex(mem, X509_get_subject_name(x), 0, XN_FLAG_RFC2253) >= 0) {
        long n = BIO_get_mem_data(mem, &p);
        rc = n < 0 ? CT_ETLS : (size_t)n >= len ? CT_ELIMIT : (int)n;
        for (long i = 0; rc >= 0 && i < n; i++)
            if ((unsigned char)p[i] < 0x20 || (unsigned char)p[i] >= 0x7f)
                rc = CT_ETLS;
        if (rc >= 0) {
            memcpy(buf, p, (size_t)n);
            buf[n] = '\0';
        }
    }
    BIO_free(mem);
    return rc;
}

void ct_tls_conn_describe(SSL *ssl, char *buf, size_t len)
{
    const char *sni = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
    const unsigned char *alpn = NULL;
    unsigned int alpn_len = 0;
    SSL_get0_alpn_selected(ssl, &alpn, &alpn_len);
    snprintf(buf, len, "%s %s %s%s%s%s%.*s", SSL_get_version(ssl), SSL_get_cipher_name(ssl),
             SSL_session_reused(ssl) ? "resumed" : "full", sni ? " sni=" : "", sni ? sni : "",
             alpn_len ? " alpn=" : "", (int)alpn_len, alpn ? (const char *)alpn : "");
}

bool ct_tls_alpn_is_h2(SSL *ssl)
{
    const unsigned char *alpn = NULL;
    unsigned int alpn_len = 0;
    SSL_get0_alpn_selected(ssl, &alpn, &alpn_len);
    return alpn_len == 2 && memcmp(alpn, "h2", 2) == 0;
}

bool ct_tls_alpn_is_acme(SSL *ssl)
{
    const unsigned char *alpn = NULL;
    unsigned int alpn_len = 0;
    SSL_get0_alpn_selected(ssl, &alpn, &alpn_len);
    return alpn_len == 10 && memcmp(alpn, "acme-tls/1", 10) == 0;
}

void ct_tls_close_notify(SSL *ssl)
{
    /* SSL_shutdown() sets SSL_SENT_SHUTDOWN before trying to write, so the
     * session survives SSL_free() even if the socket cannot take the alert. */
    if (SSL_is_init_finished(ssl) && !(SSL_get_shutdown(ssl) & SSL_SENT_SHUTDOWN))
        SSL_shutdown(ssl);
    ERR_clear_error();
}

bool ct_tls_ktls_send(SSL *ssl)
{
    BIO *w = SSL_get_wbio(ssl);
    return w != NULL && BIO_get_ktls_send(w) > 0;
}

bool ct_tls_ktls_recv(SSL *ssl)
{
    BIO *r = SSL_get_rbio(ssl);
    return r != NULL && BIO_get_ktls_recv(r) > 0;
}

void ct_tls_error_string(unsigned long e, char *buf, size_t len)
{
    const char *lib = ERR_lib_error_string(e);
    const char *reason = ERR_reason_error_string(e);
    if (reason != NULL)
        snprintf(buf, len, "%s%s%s", lib ? lib : "", lib ? ": " : "", reason);
    else
        ERR_error_string_n(e, buf, len);
}

size_t ct_tls_drain_errors(char *buf, size_t len)
{
    size_t count = 0, used = 0;
    const char *data = NULL;
    int flags = 0;
    unsigned long e;
    if (len > 0)
        buf[0] = '\0';
    while ((e = ERR_get_error_all(NULL, NULL, NULL, &data, &flags)) != 0) {
        count++;
        char one[256];
        ct_tls_error_string(e, one, sizeof(one));
        bool txt = (flags & ERR_TXT_STRING) && data != NULL && data[0] != '\0';
        if (used + 1 < len) {
            int n = snprintf(buf + used, len - used, "%s%s%s%s", used ? "; " : "", one,
                             txt ? " " : "", txt ? data : "");
            used = n < 0 ? used : CT_MIN(len - 1, used + (size_t)n);
        }
    }
    return count;
}

bool ct_tls_error_is_real(unsigned long e)
{
    return ERR_GET_LIB(e) != 0;
}

const char *ct_tls_verify_error(const SSL *ssl)
{
    long v = SSL_get_verify_result(ssl);
    return v == X509_V_OK ? NULL : X509_verify_cert_error_string(v);
}

bool ct_tls_error_is_plain_http(unsigned long e)
{
    return ERR_GET_LIB(e) == ERR_LIB_SSL && (ERR_GET_REASON(e) == SSL_R_HTTP_REQUEST ||
                                             ERR_GET_REASON(e) == SSL_R_HTTPS_PROXY_REQUEST);
}

int ct_tls_answer_plain_http(int fd)
{
    static const char body[] =
        "400 Bad Request: plain HTTP was sent to an HTTPS port; use https://\n";
    char resp[256];
    int n = snprintf(resp, sizeof(resp),
                     "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\n"
                     "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
                     sizeof(body) - 1, body);
    CT_ASSERT(n > 0 && (size_t)n < sizeof(resp));
    ssize_t w = send(fd, resp, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w != n)
        return CT_EIO;
    shutdown(fd, SHUT_WR);
    /* Unread input at close() makes the kernel send RST, and the client may
     * then lose the answer: read what is already here (bounded). */
    char sink[4096];
    for (int i = 0; i < 16; i++) {
        ssize_t r = recv(fd, sink, sizeof(sink), MSG_DONTWAIT);
        if (r <= 0)
            break;
    }
    return CT_OK;
}

int ct_tls_version_parse(const char *s)
{
    if (s == NULL)
        return CT_ECONF;
    if (strcasecmp(s, "TLSv1.2") == 0 || strcmp(s, "1.2") == 0)
        return CT_TLS_V1_2;
    if (strcasecmp(s, "TLSv1.3") == 0 || strcmp(s, "1.3") == 0)
        return CT_TLS_V1_3;
    return CT_ECONF;
}
