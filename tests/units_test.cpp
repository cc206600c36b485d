#include <gtest/gtest.h>
#include "dlscale/units.hpp"
TEST(Units, Placeholder) { EXPECT_DOUBLE_EQ(dlscale::in_seconds(dlscale::parse_seconds("5 us")), 5e-6); }
