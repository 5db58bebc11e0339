# bench/lib/tls_ca.sh: a test CA and one server certificate made with openssl
# at run time, for the cells with a TLS origin (bench/tls_origin/run.sh,
# bench/micro/reqcost.sh's http-tlspass). Sourced, never run.
#
#   b_test_ca DIR CN SAN   DIR/ca.pem (EC P-256 CA) and DIR/origin.pem +
#                          DIR/origin.key for CN with subjectAltName SAN
#                          ("DNS:origin.bench,IP:127.0.0.1"), valid 2 days;
#                          non-zero (openssl's words on stderr) on failure
b_test_ca() {
    local d=$1 cn=$2 san=$3
    openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$d/ca.key" \
        -out "$d/ca.pem" -days 2 -subj "/CN=cachet bench CA" \
        -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign" \
        2>"$d/ca.err" &&
        openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$d/origin.key" \
            -out "$d/origin.csr" -subj "/CN=$cn" 2>>"$d/ca.err" &&
        printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth\n' "$san" >"$d/origin.ext" &&
        openssl x509 -req -in "$d/origin.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" -CAcreateserial \
            -days 2 -extfile "$d/origin.ext" -out "$d/origin.pem" 2>>"$d/ca.err" ||
        { echo "b_test_ca: openssl could not make the test CA:" >&2; tail -3 "$d/ca.err" >&2; return 1; }
}
