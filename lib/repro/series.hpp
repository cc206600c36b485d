// Internal: an experiment's rows cut into prediction series, and the label of each, shared by the printed
// tables (print.cpp) and the SVG figures (svg.cpp).
#pragma once

#include <string>
#include <vector>

#include "dlscale/reproduce.hpp"

namespace dlscale::repro {

/// Consecutive rows of one prediction series (same system, variant, model, framework, precision,
/// inputs, and increasing GPU counts).
struct RowSeries {
  std::vector<const Row*> rows;
};

std::vector<RowSeries> series_of(const ExperimentResult& x);

/// Each series' label: the coordinates that vary across the series (the batch per GPU with `with_batch`),
/// or "model framework" where none does.
std::vector<std::string> series_labels(const std::vector<RowSeries>& ss, bool with_batch = true);

}  // namespace dlscale::repro
