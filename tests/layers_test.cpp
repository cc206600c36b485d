// The layers of cmake/layers.txt: every folder of lib/, sim/ and include/ includes only its own layer and
// the layers below it (issue 36, item 2). The checker itself is tested on small trees with a planted
// upward include, so that a check that finds nothing cannot pass by not looking.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "support/layers.hpp"

namespace fs = std::filesystem;
using dlscale::test::check_layers;

namespace {

std::string joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += l + "\n";
  return s;
}

/// A scratch source tree, removed at the end of the test.
class Tree {
 public:
  Tree()
      : root_(fs::temp_directory_path() /
              ("dlscale-layers-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name())) {
    fs::remove_all(root_);
  }
  ~Tree() { fs::remove_all(root_); }
  Tree(const Tree&) = delete;
  Tree& operator=(const Tree&) = delete;

  void write(const std::string& rel, const std::string& text) const {
    fs::create_directories((root_ / rel).parent_path());
    std::ofstream(root_ / rel) << text;
  }
  [[nodiscard]] const fs::path& root() const { return root_; }

 private:
  fs::path root_;
};

/// core < io < predict, with a public header for core and one for predict.
void write_small_tree(const Tree& t, const std::string& allow = "") {
  t.write("layers.txt",
          "# bottom to top\nlayer core lib/core include/dlscale/units.hpp\nlayer io lib/io\n"
          "layer predict lib/predict include/dlscale/predict.hpp\n" +
              allow);
  t.write("include/dlscale/units.hpp", "#pragma once\n#include <string>\n");
  t.write("include/dlscale/predict.hpp", "#pragma once\n#include \"dlscale/units.hpp\"\n");
  t.write("lib/core/units.cpp", "#include \"dlscale/units.hpp\"\n");
  t.write("lib/io/reader.hpp", "#pragma once\n#include \"dlscale/units.hpp\"\n");
  t.write("lib/predict/predict.cpp", "#include \"dlscale/predict.hpp\"\n#include \"io/reader.hpp\"\n");
}

}  // namespace

TEST(Layers, NoFolderOfTheRepositoryIncludesALayerAboveIt) {
  const auto problems = check_layers(DLSCALE_SOURCE_DIR, "cmake/layers.txt");
  EXPECT_TRUE(problems.empty()) << joined(problems);
}

TEST(Layers, ATreeWhoseIncludesPointDownPasses) {
  Tree t;
  write_small_tree(t);
  EXPECT_EQ(joined(check_layers(t.root(), "layers.txt")), "");
}

TEST(Layers, APlantedUpwardIncludeIsNamedWithFileAndLine) {
  Tree t;
  write_small_tree(t);
  t.write("lib/core/enums.cpp", "#include <vector>\n\n#include \"dlscale/units.hpp\"\n#include \"dlscale/predict.hpp\"\n");
  t.write("lib/io/reader.cpp", "#include \"io/reader.hpp\"\n  #  include <dlscale/predict.hpp>\n");
  EXPECT_EQ(joined(check_layers(t.root(), "layers.txt")),
            "lib/core/enums.cpp:4: layer 'core' includes \"dlscale/predict.hpp\" of layer 'predict', above it\n"
            "lib/io/reader.cpp:2: layer 'io' includes \"dlscale/predict.hpp\" of layer 'predict', above it\n");
}

TEST(Layers, AQuotedIncludeResolvesBesideTheFileFirst) {
  Tree t;
  write_small_tree(t);
  // "reader.hpp" beside lib/predict/x.cpp is predict's own; the same name under lib/io is not meant.
  t.write("lib/predict/reader.hpp", "#pragma once\n");
  t.write("lib/io/x.cpp", "#include \"reader.hpp\"\n#include \"../predict/reader.hpp\"\n");
  EXPECT_EQ(joined(check_layers(t.root(), "layers.txt")),
            "lib/io/x.cpp:2: layer 'io' includes \"../predict/reader.hpp\" of layer 'predict', above it\n");
}

TEST(Layers, AnAllowedUpwardIncludePassesAndAStaleEntryFails) {
  Tree t;
  write_small_tree(t,
                   "allow lib/core/enums.cpp dlscale/predict.hpp the names move next\n"
                   "allow lib/core/units.cpp dlscale/predict.hpp gone already\n");
  t.write("lib/core/enums.cpp", "#include \"dlscale/predict.hpp\"\n");
  EXPECT_EQ(joined(check_layers(t.root(), "layers.txt")),
            "layers.txt:6: allow lib/core/units.cpp dlscale/predict.hpp: no such upward include any more (remove the entry)\n");
}

TEST(Layers, AFileOutsideEveryLayerAndAMissingPathAreNamed) {
  Tree t;
  write_small_tree(t, "layer cli lib/cli\n");
  t.write("lib/zoo/arch.cpp", "#include \"dlscale/units.hpp\"\n");
  EXPECT_EQ(joined(check_layers(t.root(), "layers.txt")),
            "layers.txt: layer 'cli': no such path lib/cli\n"
            "lib/zoo/arch.cpp: in no layer of layers.txt\n");
}
