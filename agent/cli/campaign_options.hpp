// The campaign options shared by `tune` and `nightly` (workload, size, budgets, steps,
// seeds, ...), declared once on a CLI11 subcommand so both --help texts agree.
#pragma once
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "agent/campaign/campaign.hpp"

namespace sg::agent {

// Declares everything except the trial/time budget and --resume on `app`.
// --memory-budget strings land in `budgets` (see apply_memory_budgets).
void add_campaign_options(CLI::App* app, CampaignOptions& o, std::vector<std::string>& budgets);

// Declares where trials run: --executor, --gpus, --parallel-trials, --trial-world-size,
// --slurm-partition, --shared-dir, --slurm-gpus-per-rank (docs/controller.md "Executors").
void add_executor_options(CLI::App* app, CampaignOptions& o);

// The default trainer thread count for a host with `cores` CPUs and `gpus` GPU slots.
int host_threads(int cores, int gpus);

// Parses NAME=SIZE budgets (default fast=141GiB fast_80gb=80GiB) into o.budgets, fills
// the trainer and --threads defaults and validates every option before anything runs or is written:
// CampaignOptions::validate, a database path that is a file (check_db_path), the runs
// directory writable, and a local executor's --threads and --trial-world-size within
// this host's CPUs. Throws UsageError naming the option.
void apply_campaign_options(CampaignOptions& o, std::vector<std::string> budgets);

// Throws UsageError unless `path` can be a SQLite database file: not empty, not
// ":memory:", not a URI, not a directory, in a directory that exists or can be created.
void check_db_path(const std::string& flag, const std::string& path);

// Throws UsageError unless `dir` is (or can be created as) a writable directory. Probes
// by creating and removing a temporary directory; leaves nothing behind either way.
void check_output_dir(const std::string& flag, const std::string& dir);

// Number checks for options: finite and > 0 (>= 0), with the value in the message as
// given (CLI::PositiveNumber prints its upper bound, the largest double, in 309 digits).
CLI::Validator positive_number();
CLI::Validator non_negative_number();

// The CPUs this process may run on (its affinity mask), at least 1.
int host_cpus();

}  // namespace sg::agent
