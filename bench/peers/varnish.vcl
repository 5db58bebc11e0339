vcl 4.1;
# Varnish with its built-in VCL: it stores what the origin's Cache-Control
# allows and passes the rest (no-store becomes hit-for-miss). Only the
# backend is ours.
backend default {
    .host = "127.0.0.1";
    .port = "@ORIGIN_PORT@";
    .connect_timeout = 2s;
    .first_byte_timeout = 10s;
}
