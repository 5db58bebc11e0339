# proxy/ops.cmake: operations (stats, admin listener, access log, health
# checks, reload), included at the end of proxy/CMakeLists.txt.
#
# ct_stats is pure C (counters, renderings, the access-log formatter and
# writer): tests/unit/test_stats*.c link it alone. The parts that need
# libevent (admin listener, health checks, reload) join the cachet binary.
add_library(ct_stats STATIC
  ${CMAKE_CURRENT_LIST_DIR}/stats.c
  ${CMAKE_CURRENT_LIST_DIR}/accesslog.c)
target_link_libraries(ct_stats PUBLIC ct_common Threads::Threads)

# The operations sources join the binary once proxy_int.h carries their hooks
# (struct ct_proxy.ops, the per-worker stats block): the wiring lands in the
# proxy's files, which may be committed after this file.
file(STRINGS ${CMAKE_CURRENT_LIST_DIR}/proxy_int.h CT_OPS_WIRED REGEX "struct ct_ops \\*ops;")
if(TARGET cachet AND CT_OPS_WIRED)
  foreach(src admin.c ops.c ops_events.c health.c reload.c ctl.c)
    if(EXISTS ${CMAKE_CURRENT_LIST_DIR}/${src})
      target_sources(cachet PRIVATE ${CMAKE_CURRENT_LIST_DIR}/${src})
    endif()
  endforeach()
  target_link_libraries(cachet ct_stats m) # m: ctl.c
  # The dashboard page (GET / on the admin listener), compiled in.
  set(CT_DASH_C ${CMAKE_CURRENT_BINARY_DIR}/dashboard_html.c)
  add_custom_command(OUTPUT ${CT_DASH_C}
    COMMAND ${CMAKE_COMMAND} -DIN=${CMAKE_CURRENT_LIST_DIR}/dashboard.html -DOUT=${CT_DASH_C}
            -DVAR=ct_dashboard_html -P ${CMAKE_CURRENT_LIST_DIR}/embed.cmake
    DEPENDS ${CMAKE_CURRENT_LIST_DIR}/dashboard.html ${CMAKE_CURRENT_LIST_DIR}/embed.cmake
    COMMENT "Embedding proxy/dashboard.html" VERBATIM)
  target_sources(cachet PRIVATE ${CT_DASH_C})
endif()
# Re-run that check whenever proxy_int.h changes.
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/proxy_int.h)
