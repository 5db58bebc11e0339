# proxy/cache.cmake: the cache on the request path (cache_req.c, cache_deliver.c,
# cache_fill.c, cache_bg.c),
# included at the end of proxy/CMakeLists.txt.
if(TARGET cachet AND TARGET ct_cache)
  target_sources(cachet PRIVATE ${CMAKE_CURRENT_LIST_DIR}/cache_req.c
    ${CMAKE_CURRENT_LIST_DIR}/cache_deliver.c ${CMAKE_CURRENT_LIST_DIR}/cache_fill.c
    ${CMAKE_CURRENT_LIST_DIR}/cache_bg.c ${CMAKE_CURRENT_LIST_DIR}/cache_ban_glue.c)
  target_link_libraries(cachet ct_cache)
endif()
