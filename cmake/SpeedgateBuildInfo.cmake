# The build's git SHA goes into the trainer's fingerprint: results from another build
# are another environment. Regenerated on every build, rewritten only when it changes.
set(SPEEDGATE_BUILD_INFO_DIR ${CMAKE_BINARY_DIR}/generated)
add_custom_target(speedgate_build_info
  COMMAND ${CMAKE_COMMAND} -DSRC=${CMAKE_SOURCE_DIR} -DOUT=${SPEEDGATE_BUILD_INFO_DIR}/speedgate_build_info.hpp
          -DVERSION=${PROJECT_VERSION} -P ${CMAKE_SOURCE_DIR}/cmake/WriteBuildInfo.cmake
  BYPRODUCTS ${SPEEDGATE_BUILD_INFO_DIR}/speedgate_build_info.hpp
  COMMENT "speedgate build info")
add_library(speedgate_build_info_headers INTERFACE)
target_include_directories(speedgate_build_info_headers INTERFACE ${SPEEDGATE_BUILD_INFO_DIR})
add_dependencies(speedgate_build_info_headers speedgate_build_info)
