// The kernel-trial result file (protocol §5) is parsed strictly: every flaw is an invalid
// result naming the field, never a guess; an ok file also decodes as a TrialResult header.
#include "agent/protocol/kernel_trial_result.hpp"

#include <gtest/gtest.h>

namespace sg::agent {
namespace {

using nlohmann::json;

json good() {
  return {{"protocol", 1},
          {"kind", "kernel_trial"},
          {"status", "ok"},
          {"error", ""},
          {"family", "ROPE"},
          {"device", "cuda:0"},
          {"micro_batch", 32},
          {"repeats", 31},
          {"ops", {"rope fp32"}},
          {"variants",
           {{{"variant", "plain_aten"},
             {"params", "plain"},
             {"fwd_us", 500.0},
             {"fwdbwd_us", 1300.0},
             {"matches_plain", true}},
            {{"variant", "fused_cuda"},
             {"params", "threads=128,vec=2"},
             {"fwd_us", 44.0},
             {"fwdbwd_us", 85.0},
             {"matches_plain", true}}}},
          {"fingerprint", {{"device", "cuda"}}}};
}

TEST(KernelTrialResult, ParsesEveryVariant) {
  auto p = parse_kernel_trial_text(good().dump());
  ASSERT_TRUE(p.result) << p.error;
  EXPECT_EQ(p.result->family, "ROPE");
  EXPECT_EQ(p.result->micro_batch, 32);
  ASSERT_EQ(p.result->variants.size(), 2u);
  EXPECT_TRUE(p.result->variants[0].plain());
  EXPECT_EQ(p.result->variants[1].params, "threads=128,vec=2");
  EXPECT_DOUBLE_EQ(p.result->variants[1].fwdbwd_us, 85.0);
  auto header = parse_kernel_trial_as_result(good().dump());
  ASSERT_TRUE(header.result);
  EXPECT_EQ(header.result->status, "ok");
  EXPECT_EQ(header.result->raw.at("family"), "ROPE");
}

TEST(KernelTrialResult, AFailedTrialNeedsOnlyStatusAndError) {
  auto p = parse_kernel_trial_text(json{
      {"protocol", 1},
      {"kind", "kernel_trial"},
      {"status", "oom"},
      {"error", "CUDA out of memory"}}.dump());
  ASSERT_TRUE(p.result) << p.error;
  EXPECT_EQ(p.result->status, "oom");
}

TEST(KernelTrialResult, EveryFlawIsInvalidAndNamed) {
  std::vector<std::pair<json, std::string>> cases;
  auto with = [&](const std::function<void(json&)>& f, const std::string& why) {
    json j = good();
    f(j);
    cases.emplace_back(j, why);
  };
  with([](json& j) { j["kind"] = "run"; }, "'kind'");
  with([](json& j) { j["protocol"] = 2; }, "protocol");
  with([](json& j) { j.erase("variants"); }, "'variants'");
  with([](json& j) { j["variants"] = json::array(); }, "'variants'");
  with([](json& j) { j["ops"] = json::array(); }, "'ops'");
  with([](json& j) { j["variants"][1]["fwdbwd_us"] = -1.0; }, "'fwdbwd_us'");
  with([](json& j) { j["variants"][1]["fwdbwd_us"] = "fast"; }, "'fwdbwd_us'");
  with([](json& j) { j["variants"][1]["matches_plain"] = 1; }, "'matches_plain'");
  with([](json& j) { j["variants"][1]["params"] = ""; }, "'params'");
  with([](json& j) { j.erase("fingerprint"); }, "'fingerprint'");
  for (const auto& [j, why] : cases) {
    auto p = parse_kernel_trial_text(j.dump());
    EXPECT_FALSE(p.result) << j.dump();
    EXPECT_NE(p.error.find(why), std::string::npos) << p.error;
  }
  EXPECT_FALSE(parse_kernel_trial_text("").result);
  EXPECT_NE(parse_kernel_trial_text("{\"protocol\": 1, \"ki").error.find("not valid JSON"),
            std::string::npos);
  EXPECT_FALSE(parse_kernel_trial_as_result("garbage").result);
}

}  // namespace
}  // namespace sg::agent
