# Finds LibTorch and decides whether the CUDA path is built.
#   SPEEDGATE_CUDA=AUTO: on when the LibTorch found has CUDA (libtorch_cuda) and nvcc works.
#   SPEEDGATE_CUDA=ON:   required (configure fails otherwise).  OFF: CPU only.
# CUDA must be enabled before find_package(Torch) so Torch's config sees the toolkit.
set(SPEEDGATE_WITH_CUDA OFF)
# A pip torch prefix is <site>/torch/share/cmake; TorchConfig's find_library(torch) looks
# in system dirs before <site>/torch/lib, so on a machine that also has Debian's LibTorch
# it would mix the two. Putting <site>/torch on the prefix path makes its lib/ win.
foreach(p IN LISTS CMAKE_PREFIX_PATH)
  if(EXISTS "${p}/Torch/TorchConfig.cmake")
    get_filename_component(_torch_root "${p}/../.." ABSOLUTE)
    list(PREPEND CMAKE_PREFIX_PATH "${_torch_root}")
  endif()
endforeach()
if(NOT SPEEDGATE_CUDA STREQUAL "OFF")
  set(_torch_lib_hints)
  foreach(p IN LISTS CMAKE_PREFIX_PATH)
    list(APPEND _torch_lib_hints ${p}/../../lib ${p}/lib)
  endforeach()
  find_library(SPEEDGATE_TORCH_CUDA_LIB torch_cuda HINTS ${_torch_lib_hints})
  include(CheckLanguage)
  check_language(CUDA)
  if(SPEEDGATE_TORCH_CUDA_LIB AND CMAKE_CUDA_COMPILER)
    set(SPEEDGATE_WITH_CUDA ON)
  elseif(SPEEDGATE_CUDA STREQUAL "ON")
    message(FATAL_ERROR "SPEEDGATE_CUDA=ON but LibTorch has no CUDA (libtorch_cuda: "
                        "${SPEEDGATE_TORCH_CUDA_LIB}) or nvcc was not found (${CMAKE_CUDA_COMPILER})")
  endif()
endif()
if(SPEEDGATE_WITH_CUDA)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 90)
  endif()
  if(NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST})
    set(ENV{TORCH_CUDA_ARCH_LIST} "9.0")
  endif()
  set(CMAKE_CUDA_STANDARD 17)
  enable_language(CUDA)
endif()
find_package(Torch REQUIRED)
message(STATUS "speedgate: LibTorch ${Torch_VERSION}, CUDA path ${SPEEDGATE_WITH_CUDA}")

# Torch's imported targets carry flags (e.g. -D_GLIBCXX_USE_CXX11_ABI) in TORCH_CXX_FLAGS.
separate_arguments(SPEEDGATE_TORCH_CXX_FLAGS UNIX_COMMAND "${TORCH_CXX_FLAGS}")

# speedgate_torch: one interface target every LibTorch user links.
add_library(speedgate_torch INTERFACE)
target_link_libraries(speedgate_torch INTERFACE ${TORCH_LIBRARIES})
target_compile_options(speedgate_torch INTERFACE $<$<COMPILE_LANGUAGE:CXX>:${SPEEDGATE_TORCH_CXX_FLAGS}>)
if(SPEEDGATE_WITH_CUDA)
  target_compile_definitions(speedgate_torch INTERFACE SPEEDGATE_WITH_CUDA=1)
  # c10d with NCCL on the CUDA build (pip torch ships no gloo headers)
  if(NCCL_INCLUDE_DIR)
    target_include_directories(speedgate_torch SYSTEM INTERFACE ${NCCL_INCLUDE_DIR})
  endif()
  target_compile_definitions(speedgate_torch INTERFACE USE_C10D_NCCL USE_DISTRIBUTED USE_C10D)
else()
  target_compile_definitions(speedgate_torch INTERFACE SPEEDGATE_WITH_CUDA=0)
endif()
