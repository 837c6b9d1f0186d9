// On-device model build (label gpu; trainer/model/init_device.hpp): the wam small
// workload built on CUDA has every parameter on the GPU (trainable fp32, frozen bf16),
// two builds from one seed are bitwise equal (digests), another seed changes the
// trainable weights only, and the build allocates almost nothing on the host (it used to
// initialise every weight on the CPU and copy it over).
#include "trainer/result/digest.hpp"
#include "trainer/runtime/memory_tracker.hpp"
#include "trainer/switches/switch_config.hpp"
#include "trainer/workload/wam/wam_workload.hpp"

#include <gtest/gtest.h>

#include <string>

namespace sg::trainer {
namespace {

struct Built {
  std::string trainable, frozen;  // digests
  int64_t param_bytes = 0;        // fp32 trainable + bf16 frozen
  int64_t host_peak_bytes = 0;    // CPU tensor bytes at the build's high-water mark
};

Built build_small(uint64_t seed) {
  const c10::Device cuda(c10::kCUDA, 0);
  const c10::Device cpu(c10::kCPU);
  install_cpu_memory_tracker();
  reset_memory_peaks(cpu);
  const int64_t host_before = memory_in_use(cpu);
  WamWorkload w(wam_config("small"), resolve_switches({}, ""), cuda, seed);
  Built b;
  b.host_peak_bytes = memory_peaks(cpu).allocated - host_before;
  for (const auto& [name, p] : w.named_trainable()) {
    EXPECT_EQ(p.device(), cuda) << name;
    EXPECT_EQ(p.scalar_type(), at::kFloat) << name;
    b.param_bytes += p.numel() * static_cast<int64_t>(p.element_size());
  }
  for (const auto& [name, p] : w.named_frozen()) {
    EXPECT_EQ(p.device(), cuda) << name;
    EXPECT_EQ(p.scalar_type(), at::kBFloat16) << name;
    b.param_bytes += p.numel() * static_cast<int64_t>(p.element_size());
  }
  b.trainable = digest_tensors(w.named_trainable());
  b.frozen = digest_tensors(w.named_frozen());
  return b;
}

TEST(GpuDeviceInit, SmallWorkloadIsBuiltOnTheGpuDeterministically) {
  ASSERT_TRUE(torch::cuda::is_available());
  const Built a = build_small(11), again = build_small(11), other = build_small(12);
  EXPECT_EQ(a.trainable, again.trainable);
  EXPECT_EQ(a.frozen, again.frozen);
  EXPECT_NE(a.trainable, other.trainable) << "the run seed must reach the CUDA generator";
  EXPECT_EQ(a.frozen, other.frozen) << "frozen modules come from the fixed kFrozenSeed";
  // Host-side init would hold at least the whole model on the CPU at once.
  EXPECT_LT(a.host_peak_bytes, a.param_bytes / 20)
      << "host bytes " << a.host_peak_bytes << " of " << a.param_bytes;
}

}  // namespace
}  // namespace sg::trainer
