// Internal: the parallel model's per-layer queries with the network's block numbers given, so that a caller that
// asks about many layouts or stages (parallel_step, plan) parses the layers' names once (transformer_blocks).
#pragma once

#include <cstdint>
#include <vector>

#include "dlscale/parallel.hpp"

namespace dlscale {

/// transformer_shape with transformer_blocks(net) given.
TransformerShape transformer_shape(const Network& net, const std::vector<int>& block);
/// Eq. P31: the most blocks one model chunk of the layout holds (P6/P26/P26b's chunks), `blocks` the model's.
std::int64_t most_blocks_in_a_chunk(std::int64_t blocks, const ParallelLayout& l);
/// layer_stages with transformer_blocks(net) given.
std::vector<int> layer_stages(const std::vector<int>& block, const ParallelLayout& l);
/// full_recompute_blocks with transformer_blocks(net) given.
std::vector<BlockRecompute> full_recompute_blocks(const std::vector<int>& block, const ParallelLayout& l, double fraction);
/// rank_params with layer_stages(net, l) given.
std::int64_t rank_params(const Network& net, const std::vector<int>& stages, const ParallelLayout& l, int stage);
/// rank_expert_params with layer_stages(net, l) given.
std::int64_t rank_expert_params(const Network& net, const std::vector<int>& stages, const ParallelLayout& l, int stage);
/// rank_memory with the blocks, the shape and the stages given.
MemoryEstimate rank_memory(const Network& net, const std::vector<int>& block, const TransformerShape& shape,
                           const std::vector<int>& stages, const ParallelLayout& l, int stage, const ComputeOptions& opt,
                           const Sharding& sharding, int dp_cp, ActivationRecompute r, Bytes reserved);

}  // namespace dlscale
