// Size table and analytic counts of the wam workload (see wam_config.hpp, docs/workloads.md).
#include "trainer/workload/wam/wam_config.hpp"

#include "trainer/workload/size_table.hpp"

namespace sg::trainer {
namespace {

WamConfig make(const char* name, int64_t dv, int64_t heads, int64_t hd, int64_t ffn, int64_t layers,
               int64_t da, int64_t fa, int64_t dt, int64_t tl, int64_t th, int64_t tlen,
               int64_t tffn, int64_t vocab, int64_t frames, int64_t h, int64_t w,
               std::array<int64_t, 4> vae, int64_t z, int64_t action_tokens, int64_t mb) {
  WamConfig c;
  c.name = name;
  c.video_dim = dv, c.heads = heads, c.head_dim = hd, c.video_ffn = ffn, c.layers = layers;
  c.action_dim = da, c.action_ffn = fa;
  c.text_dim = dt, c.text_layers = tl, c.text_heads = th, c.text_len = tlen, c.text_ffn = tffn,
  c.text_vocab = vocab;
  c.frames = frames, c.height = h, c.width = w;
  c.vae_channels = vae, c.latent_channels = z;
  c.action_tokens = action_tokens;
  c.default_micro_batch = mb;
  return c;
}

const std::vector<WamConfig>& table() {
  static const std::vector<WamConfig> kSizes = {
      //    name     dv   H   hd   ffn  L   da   fa    dt  tl th tlen tffn  vocab   T   H    W vae
      //    channels       z act mb
      make("tiny", 64, 4, 16, 256, 2, 32, 64, 32, 1, 2, 16, 64, 512, 9, 128, 128, {8, 16, 16, 16},
           4, 8, 2),
      make("small", 256, 4, 64, 1024, 4, 128, 512, 256, 2, 4, 32, 640, 4096, 17, 128, 128,
           {16, 32, 64, 64}, 16, 16, 4),
      make("base", 1536, 12, 128, 6144, 20, 512, 2048, 2048, 12, 16, 256, 5120, 256384, 17, 512,
           512, {64, 128, 256, 256}, 16, 16, 8),
      make("wam5b", 3072, 24, 128, 14336, 30, 1024, 4096, 4096, 24, 64, 512, 10240, 256384, 33, 480,
           832, {64, 128, 256, 256}, 48, 16, 1),
  };
  return kSizes;
}

int64_t linear(int64_t in, int64_t out) { return in * out + out; }

}  // namespace

std::vector<std::string> wam_size_names() { return size_names(table()); }

const WamConfig& wam_config(const std::string& size) { return find_size(table(), size, "wam"); }

int64_t trainable_params(const WamConfig& c) {
  const int64_t dv = c.video_dim, da = c.action_dim, hd = c.attn_dim();
  int64_t video_layer = 6 * dv                                          // modulation
                        + 3 * linear(dv, hd) + linear(hd, dv) + 2 * hd  // q k v o, q/k RMSNorm
                        + 2 * dv                       // cross-attn LayerNorm (affine)
                        + 4 * linear(dv, dv) + 2 * dv  // cross q k v o, q/k RMSNorm
                        + linear(dv, c.video_ffn) + linear(c.video_ffn, dv);
  int64_t action_layer = 6 * da + 3 * linear(da, hd) + linear(hd, da) + 2 * hd  //
                         + 2 * da + 4 * linear(da, da) + 2 * da                 //
                         + linear(da, c.action_ffn) + linear(c.action_ffn, da);
  int64_t top =
      linear(c.patch_features(), dv)                                  // patch embedding
      + linear(c.text_dim, dv) + linear(dv, dv)                       // video text projection
      + linear(c.freq_dim, dv) + linear(dv, dv) + linear(dv, 6 * dv)  // video time embedding
      + 2 * dv + linear(dv, c.patch_features())                       // video head
      + linear(c.action_features, da)                                 // action embedding
      + linear(c.text_dim, da) + linear(da, da)                       // action text projection
      + linear(c.freq_dim, da) + linear(da, da) + linear(da, 6 * da)  // action time embedding
      + 2 * da + linear(da, c.action_features);                       // action head
  return top + c.layers * (video_layer + action_layer);
}

int64_t text_encoder_params(const WamConfig& c) {
  const int64_t d = c.text_dim;
  const int64_t rel_buckets = 32;
  int64_t layer = d + 4 * d * d + rel_buckets * c.text_heads  // norm, q k v o, relative bias
                  + d + 3 * d * c.text_ffn;                   // norm, gated-GELU wi_0 wi_1 wo
  return c.text_vocab * d + c.text_layers * layer + d;
}

int64_t vae_params(const WamConfig& c) {
  int64_t in = 3, total = 0;
  for (int64_t ch : c.vae_channels) {
    total += in * ch * 27 + ch;
    in = ch;
  }
  total += 2 * (in * in * 2 + in);                      // temporal convs, kernel 2x1x1
  total += in * c.latent_channels + c.latent_channels;  // 1x1x1 out
  return total;
}

double model_flops_per_sample(const WamConfig& c) {
  const double tv = static_cast<double>(c.video_tokens());
  const double ta = static_cast<double>(c.action_tokens);
  const double tt = static_cast<double>(c.text_len);
  const double dv = c.video_dim, da = c.action_dim, hd = c.attn_dim();
  const double s = tv + ta;
  double per_layer =
      2 * tv * (3 * dv * hd + hd * dv)    // video q k v o
      + 2 * ta * (3 * da * hd + hd * da)  // action q k v o
      + 4 * s * s * hd                    // joint attention scores + values
      + 2 * tv * 2 * dv * dv + 2 * tt * 2 * dv * dv + 4 * tv * tt * dv  // video cross-attn
      + 2 * ta * 2 * da * da + 2 * tt * 2 * da * da + 4 * ta * tt * da  // action cross-attn
      + 2 * tv * 2 * dv * c.video_ffn + 2 * ta * 2 * da * c.action_ffn;
  double top = 2 * tv * 2 * c.patch_features() * dv  // patch embed + head
               +
               2 * tt * (c.text_dim * dv + dv * dv + c.text_dim * da + da * da)  // text projections
               + 2 * ta * 2 * c.action_features * da;  // action embed + head
  return 3.0 * (top + c.layers * per_layer);
}

}  // namespace sg::trainer
