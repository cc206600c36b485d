// dlscale: predict how fast synchronous data-parallel training runs on a GPU cluster.
// Exit status: 0 success, 2 bad input or usage, 3 no device / not compiled, 1 anything else.
#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "cli/commands.hpp"
#include "dlscale/error.hpp"
#include "dlscale/report.hpp"

namespace dlscale::cli {
namespace {
std::string g_command_line;
std::vector<std::string> g_notes;
}  // namespace
void defer_note(std::string line) { g_notes.push_back(std::move(line)); }
const std::string& command_line() { return g_command_line; }
void set_command_line(int argc, char** argv) {
  g_command_line.clear();
  for (int i = 0; i < argc; ++i) g_command_line += (i ? " " : "") + std::string(argv[i]);
}
void emit(const std::string& text, const std::string& output) {
  if (output.empty() || output == "-") {
    errno = 0;
    if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() || std::fflush(stdout) != 0)
      throw std::runtime_error(fmt::format("cannot write standard output: {}", std::strerror(errno ? errno : EIO)));
  } else {
    write_file_atomically(output, text);
  }
}
bool json_format(const std::string& format) {
  if (format == "json") return true;
  if (format != "table") throw UsageError("--format", fmt::format("unknown format '{}' (expected table or json)", format));
  return false;
}
}  // namespace dlscale::cli

int main(int argc, char** argv) {
  using namespace dlscale;
  cli::set_command_line(argc, argv);
  CLI::App app{
      "dlscale: predict iteration time, throughput, speedup and bottleneck of synchronous "
      "data-parallel training on GPU clusters"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "dlscale 0.1.0");
  // Only the subcommand the command line names is built: building every option of every subcommand was
  // two thirds of the instructions of `dlscale --version` (4.3 of 6.8 M). `--version` builds none; --help,
  // no subcommand or a misspelt one build them all, so that CLI11 lists them or says what is wrong.
  struct Command {
    std::string_view name;
    void (*setup)(CLI::App&);
  };
  static constexpr Command kCommands[] = {
      {"predict", cli::setup_predict},     {"topo", cli::setup_topo},   {"collective", cli::setup_collective},
      {"simulate", cli::setup_simulate},   {"model", cli::setup_model}, {"calibrate", cli::setup_calibrate},
      {"reproduce", cli::setup_reproduce}, {"sweep", cli::setup_sweep}, {"explain", cli::setup_explain},
      {"report", cli::setup_report},       {"plan", cli::setup_plan}};
  const std::string_view first = argc > 1 ? std::string_view(argv[1]) : std::string_view();
  bool named = first == "--version";
  for (const Command& c : kCommands)
    if (first == c.name) {
      c.setup(app);
      named = true;
    }
  if (!named)
    for (const Command& c : kCommands) c.setup(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "dlscale: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "dlscale: {}\n", cli::error_line(e));
    return exit_code_for(e);
  }
  // Whatever a command printed without emit(): a full disk or a closed pipe on standard output is an
  // error, not a silent success.
  errno = 0;
  std::cout.flush();
  if (std::fflush(stdout) != 0 || std::ferror(stdout) || !std::cout) {
    fmt::print(stderr, "dlscale: cannot write standard output: {}\n", std::strerror(errno ? errno : EIO));
    return 1;
  }
  for (const auto& note : cli::g_notes) fmt::print(stderr, "dlscale: {}\n", note);
  return 0;
}
