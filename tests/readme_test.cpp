// The README stays true: every fenced block in README.md that starts with `$ build/bin/dlscale ARGS` and
// shows output below it is run, and the output must be what the block shows, byte for byte. Blocks
// that only list commands (several `$` lines, no output) are not checked. When the model changes on
// purpose, paste the new output into the README.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "support/run.hpp"

namespace {

using dlscale::test::run_cli;
using dlscale::test::slurp;

struct Example {
  int line = 0;          // of the `$` line in README.md
  std::string args;      // after "$ build/bin/dlscale "
  std::string expected;  // the rest of the block
};

std::vector<Example> readme_examples(const std::string& text) {
  std::vector<Example> out;
  std::istringstream in(text);
  std::string line;
  int n = 0;
  bool in_block = false;
  Example cur;
  bool has_command = false;
  int commands = 0;
  const std::string prompt = "$ build/bin/dlscale ";
  while (std::getline(in, line)) {
    ++n;
    if (line.rfind("```", 0) == 0) {
      if (in_block && has_command && commands == 1 && !cur.expected.empty()) out.push_back(cur);
      in_block = !in_block;
      cur = Example{};
      has_command = false;
      commands = 0;
      continue;
    }
    if (!in_block) continue;
    if (line.rfind("$ ", 0) == 0) {
      ++commands;
      if (!has_command && line.rfind(prompt, 0) == 0) {
        has_command = true;
        cur.line = n;
        cur.args = line.substr(prompt.size());
      }
      continue;
    }
    if (has_command) cur.expected += line + "\n";
  }
  return out;
}

TEST(Readme, FindsTheExamples) {
  // The README has at least the worked example, the default prediction and a reproduce table.
  const auto ex = readme_examples(slurp(std::string(DLSCALE_SOURCE_DIR) + "/README.md"));
  EXPECT_GE(ex.size(), 3u);
}

TEST(Readme, EveryExampleOutputIsWhatTheCommandPrints) {
  for (const auto& ex : readme_examples(slurp(std::string(DLSCALE_SOURCE_DIR) + "/README.md"))) {
    SCOPED_TRACE("README.md:" + std::to_string(ex.line) + ": dlscale " + ex.args);
    const auto r = run_cli(ex.args);
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out, ex.expected);
  }
}

// The README's commands are what they say: CI (.ci/run) runs the test command verbatim, and the first
// command installs and builds only the tool (the dev preset: no tests, benchmarks or CUDA tool; no
// test-only packages such as chromium).
TEST(Readme, CiRunsTheTestCommandAndTheFirstCommandBuildsOnlyTheTool) {
  const std::string readme = slurp(std::string(DLSCALE_SOURCE_DIR) + "/README.md");
  std::vector<std::string> commands;
  std::istringstream in(readme);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(".ci/install-deps", 0) == 0) commands.push_back(line);
  ASSERT_EQ(commands.size(), 2u);
  EXPECT_EQ(commands[0],
            ".ci/install-deps --tool && cmake --preset dev && cmake --build --preset dev && build/bin/dlscale predict");
  const std::string run = slurp(std::string(DLSCALE_SOURCE_DIR) + "/.ci/run");
  EXPECT_NE(run.find("\n" + commands[1] + "\n"), std::string::npos) << commands[1];
  const std::string presets = slurp(std::string(DLSCALE_SOURCE_DIR) + "/CMakePresets.json");
  const auto dev = presets.find("\"name\": \"dev\"");
  ASSERT_NE(dev, std::string::npos);
  const std::string dev_preset = presets.substr(dev, presets.find('}', presets.find("cacheVariables", dev)) - dev);
  for (const char* off :
       {"\"DLSCALE_BUILD_TESTS\": \"OFF\"", "\"DLSCALE_BUILD_BENCH\": \"OFF\"", "\"DLSCALE_BUILD_CALIBRATE\": \"OFF\""})
    EXPECT_NE(dev_preset.find(off), std::string::npos) << off;
  const std::string deps = slurp(std::string(DLSCALE_SOURCE_DIR) + "/.ci/install-deps");
  const std::string tool_list = deps.substr(0, deps.find("case "));  // the packages before the test-only ones
  for (const char* test_only : {"chromium", "libgtest-dev", "libbenchmark-dev", "clang"})
    EXPECT_EQ(tool_list.find(test_only), std::string::npos) << test_only;
}

}  // namespace
