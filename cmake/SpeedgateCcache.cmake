# Use ccache for C++ (and CUDA) when it is installed: 2-core rebuilds stay tolerable.
find_program(SPEEDGATE_CCACHE ccache)
if(SPEEDGATE_CCACHE)
  set(CMAKE_CXX_COMPILER_LAUNCHER ${SPEEDGATE_CCACHE})
  set(CMAKE_CUDA_COMPILER_LAUNCHER ${SPEEDGATE_CCACHE})
  # Precompiled headers and ccache: these sloppiness settings let ccache hit with a PCH.
  set(ENV{CCACHE_SLOPPINESS} "pch_defines,time_macros,include_file_mtime,include_file_ctime")
  message(STATUS "speedgate: ccache ${SPEEDGATE_CCACHE}")
endif()
