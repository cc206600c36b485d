// The dlscale command: one file per subcommand, each with an options struct, setup_x and run_x
// (CLI11's "subcommands in files" layout). Only main.cpp turns exceptions into exit codes.
#pragma once

#include <CLI/CLI.hpp>

#include <exception>
#include <memory>
#include <string>
#include <string_view>

namespace dlscale::cli {

/// The command line as typed, for provenance in outputs.
const std::string& command_line();
void set_command_line(int argc, char** argv);

/// Prints `text` to stdout, or to `output` through a temporary file and a rename.
void emit(const std::string& text, const std::string& output);

/// --format of the commands that print a table or JSON (plan, explain, collective, topo show, model): true for
/// "json", false for "table"; else UsageError("--format", …), before any work is done.
bool json_format(const std::string& format);

/// A line for stderr once the command has succeeded (a warning or a note about the inputs): a command that
/// then fails prints only its error, one line (docs/compute-model.md, "Precisions").
void defer_note(std::string line);

/// The option (or positional, "PAPER") that sets a field the library names in an InputError ("batch_per_gpu" →
/// "--batch", "compute_jitter" → "--jitter"); empty for a field no option sets (lib/cli/field_options.cpp).
std::string_view option_for_field(std::string_view field) noexcept;
/// The one line main prints for an error: what() as it is, except that an InputError about a field (no place
/// in a file; at most the path the field named) names the option that set it, as a UsageError would:
/// "'--batch': the batch per GPU must be at least 1, got 0".
std::string error_line(const std::exception& e);

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
