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

if(TARGET cachet)
  foreach(src admin.c health.c reload.c)
    if(EXISTS ${CMAKE_CURRENT_LIST_DIR}/${src})
      target_sources(cachet PRIVATE ${CMAKE_CURRENT_LIST_DIR}/${src})
    endif()
  endforeach()
  target_link_libraries(cachet ct_stats)
endif()
