// Peak memory measurement. CUDA: the caching allocator's peak allocated/reserved bytes.
// CPU: a counting wrapper around the CPU allocator gives live tensor bytes and their
// high-water mark; "reserved" is the process's peak resident set (getrusage).
#pragma once

#include <c10/core/Device.h>

#include <cstdint>

namespace sg::trainer {

// Installs the counting CPU allocator (idempotent). Call before building tensors.
void install_cpu_memory_tracker();

struct MemoryPeaks {
  int64_t allocated = 0;
  int64_t reserved = 0;
};

// Peaks since the last reset_memory_peaks on this device.
MemoryPeaks memory_peaks(c10::Device device);
void reset_memory_peaks(c10::Device device);
// Bytes of live tensors right now (CPU tracker, or CUDA allocator's current).
int64_t memory_in_use(c10::Device device);

}  // namespace sg::trainer
