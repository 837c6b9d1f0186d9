#include "benchmarks/synthetic_store.hpp"

#include <filesystem>
#include <fstream>
#include <random>

#include <nlohmann/json.hpp>

#include "agent/store/store.hpp"

namespace sg::bench {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
const char* const kSwitches[] = {"SG_TEXT_CACHE", "SG_FAST_INPUT", "SG_VAE_FIRST", "SG_CKPT_LAYERS",
                                 "SG_VAE_FULLCLIP", "SG_DATA_WORKERS", "SG_ATTN_BACKEND"};
const char* const kDispositions[] = {"accepted", "accepted", "gate_failed", "slower", "pruned", "oom"};

}  // namespace

SyntheticStoreCounts write_synthetic_store(const std::string& db_path, const SyntheticStoreSpec& spec) {
  using nlohmann::json;
  sg::agent::Store store(db_path);
  auto& db = store.db();
  std::mt19937 rng(spec.seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  SyntheticStoreCounts counts;
  if (!spec.log_dir.empty()) std::filesystem::create_directories(spec.log_dir);

  store.write([&] {
    SQLite::Statement env(db,
        "INSERT OR IGNORE INTO environments (fingerprint_hash, fingerprint_json) VALUES (?, ?)");
    env.bind(1, "synthetic-fingerprint");
    env.bind(2, R"({"device":"cpu","torch":"1.13.1","threads":2})");
    env.exec();
    const auto env_id = db.execAndGet("SELECT id FROM environments WHERE fingerprint_hash = "
                                      "'synthetic-fingerprint'").getInt64();
    for (int c = 0; c < spec.campaigns; ++c) {
      SQLite::Statement camp(db,
          "INSERT INTO campaigns (state, workload, size, trainer, manifest_json, options_json, "
          "environment_id, deterministic) VALUES ('finished', 'wam', 'tiny', 'speedgate-train', "
          "'{}', ?, ?, 1)");
      const json options = {{"memory_budgets", {{"fast", 141 * kGiB}, {"fast_80gb", 80 * kGiB}}}};
      camp.bind(1, options.dump());
      camp.bind(2, env_id);
      camp.exec();
      const auto campaign_id = db.getLastInsertRowid();
      std::int64_t best_fast = 0, best_80 = 0;
      double best_fast_speed = 0, best_80_speed = 0;
      for (int e = 0; e < spec.evaluations_per_campaign; ++e) {
        json config = json::object();
        for (const char* name : kSwitches) {
          if (unit(rng) < 0.3) config[name] = "1";
        }
        std::string key;
        for (const auto& [k, v] : config.items()) key += (key.empty() ? "" : ",") + k + "=" + v.get<std::string>();
        const std::string disposition = kDispositions[rng() % 6];
        const double speedup = 0.9 + unit(rng) * (1.6 + 0.05 * c);
        const double samples = 10.0 * speedup;
        const double projected = (40 + unit(rng) * 110) * kGiB;
        const double measured = projected * (0.97 + unit(rng) * 0.06) / 4.0;

        SQLite::Statement run(db,
            "INSERT INTO trials (campaign_id, trial_key, purpose, config_key, config_json, seed, "
            "steps, micro_batch, grad_accum, state, disposition, run_ok, samples_per_s, "
            "peak_allocated_bytes, peak_reserved_bytes, param_digest, optimizer_digest, "
            "stdout_log, stderr_log, environment_id, wall_s) VALUES (?, ?, 'candidate', ?, ?, 0, 8, 2, 1, "
            "'finished', ?, 1, ?, ?, ?, 'p', 'o', ?, ?, ?, 1.5)");
        const std::string trial_key = "candidate|" + key + "|" + std::to_string(e);
        run.bind(1, campaign_id);
        run.bind(2, trial_key);
        run.bind(3, key);
        run.bind(4, config.dump());
        if (disposition == "accepted") run.bind(5); else run.bind(5, disposition);
        run.bind(6, samples);
        run.bind(7, measured);
        run.bind(8, measured * 1.1);
        run.bind(9);  // the logs' paths name the run's id: set below
        run.bind(10);
        run.bind(11, env_id);
        run.exec();
        const auto run_id = db.getLastInsertRowid();
        ++counts.runs;
        if (!spec.log_dir.empty()) {  // the controller's layout: <runs>/c<campaign>/t<run>/
          const std::string logs = spec.log_dir + "/c" + std::to_string(campaign_id) + "/t" + std::to_string(run_id);
          std::filesystem::create_directories(logs);
          std::ofstream(logs + "/stdout.log") << "step 0 loss 1.0\n";
          std::ofstream(logs + "/stderr.log") << "synthetic run " << run_id << " <script>alert(1)</script>\n";
          SQLite::Statement paths(db, "UPDATE trials SET trial_dir = ?, stdout_log = ?, stderr_log = ? WHERE id = ?");
          paths.bind(1, logs);
          paths.bind(2, logs + "/stdout.log");
          paths.bind(3, logs + "/stderr.log");
          paths.bind(4, run_id);
          paths.exec();
        }
        SQLite::Statement step(db,
            "INSERT INTO steps (trial_id, step, loss, loss_bits, grad_norm, grad_norm_bits, seconds) "
            "VALUES (?, 0, 1.0, '3f800000', 0.5, '3f000000', 0.2)");
        step.bind(1, run_id);
        step.exec();

        SQLite::Statement ev(db,
            "INSERT INTO evaluations (campaign_id, strategy, config_key, config_json, steps, "
            "disposition, gate_class, reason, speedup, speedup_spread, samples_per_s, "
            "projected_peak_bytes, trial_ids_json, on_frontier) VALUES (?, ?, ?, ?, 8, ?, ?, ?, ?, "
            "?, ?, ?, ?, ?)");
        ev.bind(1, campaign_id);
        ev.bind(2, e % 3 == 0 ? "screen" : (e % 3 == 1 ? "greedy" : "local_search"));
        ev.bind(3, key);
        ev.bind(4, config.dump());
        ev.bind(5, disposition);
        ev.bind(6, e % 4 == 0 ? "tolerance" : "bitwise");
        ev.bind(7, disposition == "accepted" ? "digests equal" : "loss bits differ at step 3 <b>");
        ev.bind(8, speedup);
        ev.bind(9, 0.02);
        ev.bind(10, samples);
        ev.bind(11, projected);
        ev.bind(12, json::array({run_id}).dump());
        ev.bind(13, disposition == "accepted" && unit(rng) < 0.2 ? 1 : 0);
        ev.exec();
        const auto eval_id = db.getLastInsertRowid();
        ++counts.evaluations;
        if (disposition == "accepted") ++counts.accepted;
        if (disposition == "gate_failed") ++counts.gate_failed;
        if (disposition == "slower") ++counts.slower;
        if (disposition == "pruned") ++counts.pruned;
        if (disposition == "oom") ++counts.oom;
        if (disposition == "accepted" && projected <= 141 * kGiB && speedup > best_fast_speed) {
          best_fast = eval_id; best_fast_speed = speedup;
        }
        if (disposition == "accepted" && projected <= 80 * kGiB && speedup > best_80_speed) {
          best_80 = eval_id; best_80_speed = speedup;
        }
        SQLite::Statement proj(db,
            "INSERT INTO projections (campaign_id, config_key, target_micro_batch, world_size, "
            "zero_stage, inputs_json, projected_bytes, measured_bytes, relative_error) VALUES "
            "(?, ?, 32, 8, 2, '{}', ?, ?, ?)");
        proj.bind(1, campaign_id);
        proj.bind(2, key);
        proj.bind(3, projected / 4.0);
        proj.bind(4, measured);
        proj.bind(5, (measured - projected / 4.0) / (projected / 4.0));
        proj.exec();
        ++counts.projections;
      }
      for (const auto& [name, id, budget] : {std::tuple{"fast", best_fast, 141 * kGiB},
                                             std::tuple{"fast_80gb", best_80, 80 * kGiB}}) {
        if (id == 0) continue;
        SQLite::Statement p(db,
            "INSERT INTO presets (campaign_id, name, budget_bytes, path, config_key, evaluation_id, "
            "trial_ids_json, speedup, speedup_spread, projected_peak_bytes, fingerprint_hash, content) "
            "SELECT campaign_id, ?, ?, ?, config_key, id, trial_ids_json, speedup, speedup_spread, "
            "projected_peak_bytes, 'synthetic-fingerprint', '' FROM evaluations WHERE id = ?");
        p.bind(1, name);
        p.bind(2, budget);
        p.bind(3, std::string("presets/") + name + ".env");
        p.bind(4, id);
        p.exec();
        ++counts.presets;
      }
    }
  });
  return counts;
}

}  // namespace sg::bench
