// Peak memory measurement (see memory_tracker.hpp).
#include "trainer/runtime/memory_tracker.hpp"

#include <c10/core/CPUAllocator.h>
#include <torch/version.h>

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#if SPEEDGATE_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif

namespace sg::trainer {
namespace {

constexpr size_t kAggregate =
    0;  // StatType::AGGREGATE (namespace differs across LibTorch versions)
std::atomic<int64_t> g_live{0};
std::atomic<int64_t> g_peak{0};

// Each block carries its size in a 64-byte header in front of the data (alignment kept),
// and the DataPtr's context is the data pointer itself, as raw_allocate (mkldnn) needs.
constexpr size_t kHeader = 64;
c10::DeleterFnPtr g_inner_deleter = nullptr;

void tracked_delete(void* data) {
  if (data == nullptr) return;
  auto* base = static_cast<uint8_t*>(data) - kHeader;
  int64_t bytes = 0;
  std::memcpy(&bytes, base, sizeof bytes);
  g_live.fetch_sub(bytes);
  g_inner_deleter(base);
}

class CountingAllocator final : public c10::Allocator {
 public:
  explicit CountingAllocator(c10::Allocator* inner) : inner_(inner) {}

#if TORCH_VERSION_MAJOR >= 2 && TORCH_VERSION_MINOR >= 3 || TORCH_VERSION_MAJOR >= 3
  c10::DataPtr allocate(size_t n) override { return wrap(n); }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }
#else
  c10::DataPtr allocate(size_t n) const override { return wrap(n); }
#endif

  c10::DeleterFnPtr raw_deleter() const override { return &tracked_delete; }

 private:
  c10::DataPtr wrap(size_t n) const {
    c10::DataPtr inner = inner_->allocate(n + kHeader);
    const auto device = inner.device();
    // The default CPU allocator's context is its data pointer; take ownership of it.
    if (g_inner_deleter == nullptr) g_inner_deleter = inner.get_deleter();
    auto* base = static_cast<uint8_t*>(inner.release_context());
    const auto bytes = static_cast<int64_t>(n);
    std::memcpy(base, &bytes, sizeof bytes);
    const int64_t live = g_live.fetch_add(bytes) + bytes;
    int64_t peak = g_peak.load();
    while (live > peak && !g_peak.compare_exchange_weak(peak, live)) {
    }
    void* data = base + kHeader;
    return c10::DataPtr(data, data, &tracked_delete, device);
  }
  c10::Allocator* inner_;
};

int64_t peak_rss_bytes() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<int64_t>(ru.ru_maxrss) * 1024;
}

}  // namespace

void install_cpu_memory_tracker() {
  static CountingAllocator* installed = nullptr;
  if (installed != nullptr) return;
  installed = new CountingAllocator(c10::GetCPUAllocator());
  c10::SetCPUAllocator(installed, /*priority=*/100);
}

MemoryPeaks memory_peaks(c10::Device device) {
#if SPEEDGATE_WITH_CUDA
  if (device.is_cuda()) {
    using c10::cuda::CUDACachingAllocator::getDeviceStats;
    const auto stats = getDeviceStats(device.index());
    const auto agg = kAggregate;
    return {stats.allocated_bytes[agg].peak, stats.reserved_bytes[agg].peak};
  }
#endif
  (void)device;
  return {g_peak.load(), peak_rss_bytes()};
}

void reset_memory_peaks(c10::Device device) {
#if SPEEDGATE_WITH_CUDA
  if (device.is_cuda()) {
    c10::cuda::CUDACachingAllocator::resetPeakStats(device.index());
    return;
  }
#endif
  (void)device;
  g_peak.store(g_live.load());
}

int64_t memory_in_use(c10::Device device) {
#if SPEEDGATE_WITH_CUDA
  if (device.is_cuda()) {
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index());
    return stats.allocated_bytes[kAggregate].current;
  }
#endif
  (void)device;
  return g_live.load();
}

}  // namespace sg::trainer
