// The trainer's command line on CLI11, like speedgate's: --help at every level with
// the defaults shown, --version, exit 2 for a usage error naming the bad flag (and the
// closest existing ones). The flags are declared once here; main.cpp runs them.
#pragma once

#include <CLI/CLI.hpp>

#include "trainer/train_loop.hpp"

namespace sg::trainer {

// `run`'s flags, bound to `o` (whose initial values are the defaults --help shows).
void add_run_options(CLI::App& run, RunOptions& o);

// What CLI11 cannot say: --result given, ranges that depend on each other.
// Throws BadInputError naming the flag.
void check_run_options(const RunOptions& o);

}  // namespace sg::trainer
