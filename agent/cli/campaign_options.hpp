// The campaign options shared by `tune` and `nightly` (workload, size, budgets, steps,
// seeds, ...), declared once on a CLI11 subcommand so both --help texts agree.
#pragma once
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "agent/search/campaign.hpp"

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
// the trainer and --threads defaults and checks --screen-steps. Throws UsageError.
void apply_campaign_options(CampaignOptions& o, std::vector<std::string> budgets);

}  // namespace sg::agent
