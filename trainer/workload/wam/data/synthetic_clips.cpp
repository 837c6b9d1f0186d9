// Synthetic clips, actions and prompts (see synthetic_clips.hpp).
#include "trainer/workload/wam/data/synthetic_clips.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <sstream>

namespace sg::trainer {
namespace {

constexpr std::array<const char*, 5> kColours = {"red", "green", "blue", "yellow", "purple"};
constexpr std::array<std::array<uint8_t, 3>, 5> kRgb = {
    {{220, 40, 40}, {40, 200, 60}, {50, 70, 230}, {230, 210, 40}, {150, 60, 190}}};
constexpr std::array<const char*, 2> kShapes = {"cube", "ball"};
constexpr std::array<const char*, 4> kDirections = {"left", "right", "up", "down"};
constexpr std::array<std::array<int, 2>, 4> kDirVec = {{{-1, 0}, {1, 0}, {0, -1}, {0, 1}}};

struct Rng {
  uint64_t state;
  uint64_t next() { return splitmix64_next(state); }
  double uniform() { return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0); }
  int below(int n) { return static_cast<int>(next() % static_cast<uint64_t>(n)); }
};

struct Shape {
  int colour, kind;
  double x, y, vx, vy, radius;
};

void draw(const Shape& s, uint8_t* frame, int64_t h, int64_t w) {
  const auto& rgb = kRgb[s.colour];
  const int64_t x0 = std::max<int64_t>(0, std::lround(s.x - s.radius));
  const int64_t x1 = std::min<int64_t>(w - 1, std::lround(s.x + s.radius));
  const int64_t y0 = std::max<int64_t>(0, std::lround(s.y - s.radius));
  const int64_t y1 = std::min<int64_t>(h - 1, std::lround(s.y + s.radius));
  const double r2 = s.radius * s.radius;
  for (int64_t y = y0; y <= y1; ++y) {
    uint8_t* row = frame + (y * w) * 3;
    for (int64_t x = x0; x <= x1; ++x) {
      if (s.kind == 1) {
        const double dx = x - s.x, dy = y - s.y;
        if (dx * dx + dy * dy > r2) continue;
      }
      std::memcpy(row + x * 3, rgb.data(), 3);
    }
  }
}

}  // namespace

SyntheticClips::SyntheticClips(const WamConfig& cfg, uint64_t seed) : cfg_(cfg), seed_(seed) {}

int SyntheticClips::prompt_id(int64_t index) const {
  return static_cast<int>(mix_seed(seed_ ^ 0x5eed, static_cast<uint64_t>(index)) % kNumPrompts);
}

const std::string& SyntheticClips::prompt(int id) {
  static const std::vector<std::string> kPrompts = [] {
    std::vector<std::string> p;
    for (int c = 0; c < 5; ++c)
      for (int s = 0; s < 2; ++s)
        for (int d = 0; d < 4; ++d)
          p.push_back(std::string("push the ") + kColours[c] + " " + kShapes[s] + " to the " +
                      kDirections[d] + " and stop");
    return p;
  }();
  return kPrompts.at(static_cast<size_t>(id));
}

void SyntheticClips::tokenize(const std::string& text, int64_t* ids, bool* mask) const {
  const int64_t len = cfg_.text_len;
  std::fill(ids, ids + len, 0);
  std::fill(mask, mask + len, false);
  std::istringstream words(text);
  std::string word;
  int64_t n = 0;
  while (words >> word && n < len - 1) {
    uint32_t h = 2166136261u;
    for (char ch : word) h = (h ^ static_cast<uint8_t>(std::tolower(ch))) * 16777619u;
    ids[n] = 2 + static_cast<int64_t>(h % static_cast<uint32_t>(cfg_.text_vocab - 2));
    mask[n++] = true;
  }
  ids[n] = 1;  // end of sequence
  mask[n] = true;
}

void SyntheticClips::make(int64_t index, uint8_t* frames, float* actions) const {
  const int64_t t_len = cfg_.frames, h = cfg_.height, w = cfg_.width;
  Rng rng{mix_seed(seed_, static_cast<uint64_t>(index))};
  const int pid = prompt_id(index);
  const int colour = pid / 8, kind = (pid / 4) % 2, dir = pid % 4;
  const double size = static_cast<double>(std::min(h, w));
  const double speed = size * 0.5 / static_cast<double>(t_len);
  std::vector<Shape> shapes;
  shapes.push_back({colour, kind, size * (0.3 + 0.4 * rng.uniform()),
                    size * (0.3 + 0.4 * rng.uniform()), kDirVec[dir][0] * speed,
                    kDirVec[dir][1] * speed, size * (0.06 + 0.05 * rng.uniform())});
  const int distractors = 1 + rng.below(2);
  for (int i = 0; i < distractors; ++i) {
    shapes.push_back({rng.below(5), rng.below(2), w * rng.uniform(), h * rng.uniform(),
                      (rng.uniform() - 0.5) * speed, (rng.uniform() - 0.5) * speed,
                      size * (0.04 + 0.04 * rng.uniform())});
  }
  const std::array<double, 3> base = {40 + 60 * rng.uniform(), 40 + 60 * rng.uniform(),
                                      40 + 60 * rng.uniform()};
  // One background row pattern per image row (vertical gradient), copied per frame.
  std::vector<uint8_t> background(static_cast<size_t>(h * w * 3));
  for (int64_t y = 0; y < h; ++y) {
    const double g = static_cast<double>(y) / static_cast<double>(h);
    const uint8_t px[3] = {static_cast<uint8_t>(base[0] + 60 * g),
                           static_cast<uint8_t>(base[1] + 40 * g),
                           static_cast<uint8_t>(base[2] + 20 * g)};
    for (int64_t x = 0; x < w; ++x)
      std::memcpy(&background[static_cast<size_t>((y * w + x) * 3)], px, 3);
  }
  for (int64_t t = 0; t < t_len; ++t) {
    uint8_t* frame = frames + t * h * w * 3;
    std::memcpy(frame, background.data(), background.size());
    for (const auto& s : shapes) {
      Shape at_t = s;
      at_t.x += s.vx * t;
      at_t.y += s.vy * t;
      draw(at_t, frame, h, w);
    }
  }
  // Actions: per action token, the main object's normalised position and velocity, the
  // distractors' positions, and a phase code.
  const int64_t ta = cfg_.action_tokens, af = cfg_.action_features;
  for (int64_t k = 0; k < ta; ++k) {
    const double u = ta > 1 ? static_cast<double>(k) / static_cast<double>(ta - 1) : 0.0;
    const double tt = u * static_cast<double>(t_len - 1);
    float* a = actions + k * af;
    std::fill(a, a + af, 0.0f);
    int64_t f = 0;
    for (const auto& s : shapes) {
      if (f + 4 > af) break;
      a[f++] = static_cast<float>((s.x + s.vx * tt) / w * 2 - 1);
      a[f++] = static_cast<float>((s.y + s.vy * tt) / h * 2 - 1);
      a[f++] = static_cast<float>(s.vx / speed);
      a[f++] = static_cast<float>(s.vy / speed);
    }
    for (int64_t m = 1; f < af; ++m) {
      a[f++] = static_cast<float>(std::sin(M_PI * m * u));
      if (f < af) a[f++] = static_cast<float>(std::cos(M_PI * m * u));
    }
  }
}

}  // namespace sg::trainer
