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

}  // namespace
