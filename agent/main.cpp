// speedgate: entry point. All logic lives in agent/cli/; only this file may exit.
#include "agent/cli/app.hpp"

int main(int argc, char** argv) { return sg::agent::run_cli(argc, argv); }
