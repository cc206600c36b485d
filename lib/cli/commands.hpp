// The dlscale command: one file per subcommand, each with an options struct, setup_x and run_x
// (CLI11's "subcommands in files" layout). Only main.cpp turns exceptions into exit codes.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <string>

namespace dlscale::cli {

/// The command line as typed, for provenance in outputs.
const std::string& command_line();
void set_command_line(int argc, char** argv);

/// Prints `text` to stdout, or to `output` through a temporary file and a rename.
void emit(const std::string& text, const std::string& output);

/// A line for stderr once the command has succeeded (a warning or a note about the inputs): a command that
/// then fails prints only its error, one line (docs/compute-model.md, "Precisions").
void defer_note(std::string line);

void setup_predict(CLI::App& app);
void setup_topo(CLI::App& app);
void setup_collective(CLI::App& app);
void setup_simulate(CLI::App& app);
void setup_model(CLI::App& app);
void setup_calibrate(CLI::App& app);
void setup_calibrate_fit(CLI::App& calibrate);  // lib/cli/calibrate_fit.cpp
void setup_reproduce(CLI::App& app);
void setup_sweep(CLI::App& app);
void setup_explain(CLI::App& app);
void setup_report(CLI::App& app);
void setup_plan(CLI::App& app);

}  // namespace dlscale::cli
