// Readable CLI11 parse errors for speedgate and speedgate-train: an unknown subcommand
// or flag is named with the closest existing ones and the list of what exists
// ("unknown command 'tunee'; did you mean 'tune'? (commands: tune, presets, ...)").
// Header-only so that both binaries share it.
#pragma once
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "common/suggest/suggest.hpp"

namespace sg {

namespace cli_detail {

inline std::vector<std::string> subcommand_names(CLI::App* app) {
  std::vector<std::string> names;
  for (auto* s : app->get_subcommands({})) names.push_back(s->get_name());
  return names;
}

inline std::vector<std::string> flag_names(CLI::App* app) {
  std::vector<std::string> names;
  for (CLI::App* a = app; a != nullptr; a = a->get_parent()) {
    for (const auto* o : a->get_options()) {
      for (const auto& l : o->get_lnames()) names.push_back("--" + l);
    }
  }
  return names;
}

// "speedgate presets emit": the program's base name, then the subcommands.
inline std::string command_path(CLI::App* app, const std::string& program) {
  std::string path;
  for (CLI::App* a = app; a->get_parent() != nullptr; a = a->get_parent())
    path = " " + a->get_name() + path;
  return program.substr(program.find_last_of('/') + 1) + path;
}

}  // namespace cli_detail

// A better message than CLI11's for an unknown subcommand or flag in argv, found by
// walking argv through the subcommand tree; `fallback` (CLI11's own) otherwise.
inline std::string explain_cli_error(CLI::App& app, int argc, const char* const* argv,
                                     const std::string& fallback) {
  CLI::App* cur = &app;
  const std::string program = argc > 0 ? argv[0] : "";
  for (int i = 1; i < argc; ++i) {
    const std::string t = argv[i];
    if (t == "--") break;
    if (t.size() > 1 && t[0] == '-') {
      const std::string name = t.substr(0, t.find('='));
      const CLI::Option* opt = nullptr;
      for (CLI::App* a = cur; a != nullptr && opt == nullptr; a = a->get_parent())
        opt = a->get_option_no_throw(name);
      if (opt == nullptr) {
        const std::string bare = name.substr(name.find_first_not_of('-'));
        std::vector<std::string> bare_names;
        for (const auto& n : cli_detail::flag_names(cur)) bare_names.push_back(n.substr(2));
        return "unknown flag " + name + did_you_mean(bare, bare_names, "--") + " (`" +
               cli_detail::command_path(cur, program) + " --help` lists them)";
      }
      if (opt->get_type_size() != 0 && t.find('=') == std::string::npos) ++i;  // its value
      continue;
    }
    const auto subs = cli_detail::subcommand_names(cur);
    if (subs.empty()) continue;  // a positional argument
    CLI::App* next = nullptr;
    for (auto* s : cur->get_subcommands({})) {
      if (s->check_name(t)) next = s;
    }
    if (next == nullptr) {
      return "unknown command '" + t + "'" + did_you_mean(t, subs) +
             " (commands: " + join_names(subs) + ")";
    }
    cur = next;
  }
  if (cur != &app || !cli_detail::subcommand_names(cur).empty()) {
    if (fallback.find("subcommand is required") != std::string::npos) {
      return "a command is required: " + join_names(cli_detail::subcommand_names(cur)) + " (`" +
             cli_detail::command_path(cur, program) + " --help`)";
    }
  }
  return fallback;
}

}  // namespace sg
