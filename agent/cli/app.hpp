// The speedgate command line: subcommands defined once (CLI11), --help generated
// from the same definitions. Returns the process exit code: 0 ok, 1 gate or
// regression failure, 2 usage or bad input.
#pragma once

namespace sg::agent {

int run_cli(int argc, char** argv);

}  // namespace sg::agent
