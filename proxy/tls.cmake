# proxy/tls.cmake: the TLS layer as its own library, so tests/unit/test_tls*.c
# link ct_tls alone (included by proxy/CMakeLists.txt).
add_library(ct_tls STATIC
  ${CMAKE_CURRENT_LIST_DIR}/tls_ctx.c
  ${CMAKE_CURRENT_LIST_DIR}/tls_certs.c
  ${CMAKE_CURRENT_LIST_DIR}/tls_conn.c
  ${CMAKE_CURRENT_LIST_DIR}/tls_tickets.c
  ${CMAKE_CURRENT_LIST_DIR}/tls_selfsigned.c)
target_link_libraries(ct_tls PUBLIC ct_common OpenSSL::SSL OpenSSL::Crypto Threads::Threads)
# The bridge from conf/'s listener settings; conf/ is added before proxy/.
if(TARGET ct_conf)
  target_sources(ct_tls PRIVATE ${CMAKE_CURRENT_LIST_DIR}/tls_conf.c)
  target_link_libraries(ct_tls PUBLIC ct_conf)
endif()
