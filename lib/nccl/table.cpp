// NCCL 2.30.7's constants (NVIDIA/nccl commit 5067397c), from shared/docs/nccl-model.md. Entries that
// page does not list are marked "tuning.cc (checked)": first recalled from the 2.1x–2.2x series, they are
// the values that shared/docs/nccl-tuning-2.30.md read from NCCL 2.30's tuning.cc (llMax, the Tree LL/LL128
// factors and per-channel caps, the tree correction factors, the ring plateau, the network overhead).
// That page prints 24 tree-correction values per protocol; the 23 kept here are its first 23, the
// buckets of 64 B … 256 MiB (larger sizes take no correction).
#include "nccl/table.hpp"

namespace dlscale::nccl {

namespace {
// A data table, one constant after another in NCCL's order with its source: split, it would only scatter
// them.
Table make_2_30_7() {  // NOLINT(readability-function-size)
  Table t;
  t.version = "2.30.7";
  t.source = "NVIDIA/nccl 2.30.7 (5067397c) src/graph/tuning.cc, search.cc, topo.h";
  // Base latencies (µs) {LL, LL128, Simple}: Tree {6.8, 14.0, 8.4}, Ring {6.6, 14.0, 8.4}.
  t.base_latency_us = {{{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}}};
  // Hardware latency per step (µs) [hw][algo][proto]:
  //   NVLink: Tree .6, 1.25, 4.0   Ring .6, 1.9, 3.4
  //   PCI:    Tree 1.0, 1.9, 4.0   Ring 1.0, 2.5, 5.7
  //   NET:    Tree 5.0, 8.5, 14    Ring 2.7, 4.0, 14.0
  t.hw_latency_us = {
      {{{{.6, 1.25, 4.0}, {.6, 1.9, 3.4}}}, {{{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}}}, {{{5.0, 8.5, 14.0}, {2.7, 4.0, 14.0}}}}};
  // Per-channel caps (GB/s) for 1 node / 2 nodes / more: Volta tree 26.5/18.5/10, LL128 ring 20;
  // Ampere tree 24/23.6/17.8 (LL128 ring 20); Hopper tree 38.7/41.4/36, LL128 ring 36.7; Blackwell tree
  // 70/42.8/24, LL128 ring 40, LL128 tree 55.6/31.67/20, LL maximum 282/90/70 (nccl-tuning-2.30.md).
  t.per_channel_tree = {{{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}}};
  t.per_channel_ring_ll128 = {{{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}, {40.0, 40.0, 40.0}}};
  t.per_channel_tree_ll128 = {
      {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}}};           // tuning.cc (checked)
  t.ll_max = {{{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {282.0, 90.0, 70.0}}};  // tuning.cc (checked)
  t.ring_ll_factor = 0.5;                 // nccl-model.md: Ring LL min(llMax, busBw·0.5)
  t.ring_ll128_factor = 0.92;             // nccl-model.md: Ring LL128 min(busBw·0.92, nChannels·perChMaxRingLL128)
  t.tree_allreduce_factor = 0.92;         // nccl-model.md: Tree all-reduce min(busBw·0.92, nChannels·perChMaxTree)
  t.tree_ll_divisor = 3.8;                // tuning.cc (checked)
  t.tree_ll128_factor_1node = 7.0 / 9.0;  // tuning.cc (checked)
  t.tree_ll128_factor = 120.0 / 128.0;    // tuning.cc (checked)
  t.plain_tree_factor = 0.85;             // a plain-tree pattern loses 15 % (shared/docs/nccl-tuning-2.30.md)
  t.tree_correction = {{
      {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
      {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0},
      {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9},
  }};                               // tuning.cc (checked)
  t.ring_plateau_pre_ampere = 1.9;  // tuning.cc (checked)
  t.ring_plateau_ampere = 1.4;      // tuning.cc (checked)
  t.net_overhead_intel_us = 1.0;    // tuning.cc getNetOverhead (checked)
  t.net_overhead_other_us = 2.0;
  // NVLS (nccl-tuning-2.30.md): "NVLS efficiency by generation: Volta 0, Ampere 0, Hopper 0.85, Blackwell
  // 0.74"; hardware latency NVLink – / – / 25 (NVLS and NVLS Tree), network – / – / 18 (NVLS) and – / – / 20.9
  // (NVLS Tree); "NVLS Tree per-channel maximum: Volta 26.5 / 18.5 / 10.0; Ampere 24.0 / 23.6 / 17.8; Hopper
  // 0 / 57.7 / 45.5; Blackwell 0 / 96.0 / 80.0".
  t.nvls_efficiency = {0.0, 0.0, 0.85, 0.74};
  // The most NVLS channels (NCCL_NVLS_NCHANNELS' default: 16 on Hopper, 32 from Blackwell on). Recalled from
  // NCCL's transport/nvls.cc, not in nccl-tuning-2.30.md; only a domain of more GPUs than that (GB200 NVL72)
  // reaches the cap: an 8-GPU node has one channel per GPU either way.
  t.nvls_max_channels = {0, 0, 16, 32};
  t.nvls_hw_latency_nvlink_us = 25.0;
  t.nvls_hw_latency_net_us = 18.0;
  t.nvls_tree_hw_latency_net_us = 20.9;
  t.per_channel_nvls_tree = {{{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {0.0, 57.7, 45.5}, {0.0, 96.0, 80.0}}};
  // PAT (nccl-tuning-2.30.md): base latency 8.0 / 8.0 / 8.0 (only Simple is used); "PAT keeps 75 %";
  // "PAT: base + log2(nodes) × inter / 3.5 + ranks × 2.8". Its network row (14, Simple) equals the Tree
  // row that the inter-node hop takes with one GPU per node, the only case PAT runs in.
  t.pat_base_latency_us = 8.0;
  t.pat_bw_factor = 0.75;
  t.pat_inter_divisor = 3.5;
  t.pat_per_rank_us = 2.8;
  // CollNet (nccl-tuning-2.30.md, hardware latency per hop, Simple): CollNet Direct NVLink 3.7, PCIe 3.7,
  // network 31; CollNet Chain NVLink 2.8, PCIe 2.8, network 30; base latency 0 (LL and LL128 unused).
  t.collnet_direct_hw_latency_intra_us = 3.7;
  t.collnet_chain_hw_latency_intra_us = 2.8;
  t.collnet_direct_hw_latency_net_us = 31.0;
  t.collnet_chain_hw_latency_net_us = 30.0;
  // Recalled from tuning.cc (2.18-2.2x; not in nccl-tuning-2.30.md): "Add 0.4 us arity serialization
  // latency" per GPU of a node after the first; CollNet Direct × 0.85 from SM90; CollNet Chain × 0.75.
  t.collnet_direct_arity_us = 0.4;
  t.collnet_direct_hopper_factor = 0.85;
  t.collnet_chain_bw_factor = 0.75;
  // What a V100's NVLink delivers, per link and direction (GB/s), where NCCL books 20. Fitted (geometric
  // mean of the per-link rates) from the measured all-reduce bus bandwidths at 1 GB, less NCCL's latency:
  //   GPU-GPU: DGX-1V 8 GPUs 135.5 GB/s over 6 links (22.67), AC922 2 GPUs 70 GB/s over 3 (23.36): the
  //     DGX-2 comparison paper's Fig. 2 (shared/reference/dgx2-ac922-p3-rtx-comparison.txt, the values
  //     held out of that copy and quoted by issue 35); fit 23.0, in-sample +1.4 % / -1.5 %, leave-one-out
  //     +3.0 % / -2.9 %.
  //   GPU-NVSwitch: DGX-2, 12 GPUs, all_reduce at 8 GiB, 127453 us less 52.8 us of issue and 83.2 us of
  //     latency: 123.7 GB/s over 6 links = 20.6 (tests/data/real-inputs/nccl-tests/dgx2-12gpu-five-
  //     collectives-2020.txt; one point, so no leave-one-out: broadcast and reduce at 8 GiB are the check).
  // Command: build/bin/nccl_logs_test --gtest_filter='*VoltaNvlink*' prints the fit and its errors.
  // Both are above NCCL's 20 and below the 25 GB/s of the datasheet; the NVSwitch's are lower because it turns
  // posted writes into non-posted ones, whose acknowledgements take bandwidth in the reverse direction (the
  // same paper, Section III-A). Other generations keep NCCL's rating: no measurement of theirs is at hand.
  t.volta_nvlink_gpu_gbps = 23.0;
  t.volta_nvlink_nvswitch_gbps = 20.6;
  // Host issue cost per GPU and call: the zero-byte rows of two real nccl-tests logs, where no data moves
  // and the time is the host loop alone (tests/data/real-inputs/nccl-tests): DGX-2 all_gather, one thread
  // for 12 GPUs, 57.30 / 57.12 / 57.20 µs → 4.77 µs per GPU; T4 all_reduce, one GPU per process, 6.36 /
  // 6.43 µs. The multi-GPU thread's 4.8 µs is taken (that is what nccl_tests_time's k − 1 issues add);
  // the usual figure quoted for one cudaLaunchKernel is of the same order.
  t.launch_us_per_gpu = 4.8;
  // Speed lists (search.cc): intra 40, 30, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3; SM90 60, 50, 40, 30, 24, 20, …
  t.speed_intra = {40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0};
  t.speed_inter = {48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.4, 1.2, 0.24, 0.12};
  t.sm90_speed_intra = {60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0};
  t.sm90_speed_inter = {48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0, 2.4, 1.2, 0.24, 0.12};
  // Blackwell (nccl-tuning-2.30.md, "Channel search speed lists").
  t.sm100_speed_intra = {90.0, 80.0, 70.0, 60.0, 50.0, 45.0, 40.0, 30.0, 24.0, 20.0, 19.0, 18.0};
  t.sm100_speed_inter = {96.0, 86.0, 80.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0,
                         20.0, 17.5, 15.0, 12.0, 6.0,  3.0,  2.4,  1.2,  0.24, 0.12};
  t.max_channels = 32;     // MAXCHANNELS/2 (MAXCHANNELS = 64)
  t.dup_threshold = 25.0;  // nccl-model.md: "If bwIntra ≥ 25 the channels are duplicated at half speed"
  t.search_timeout = 1 << 14;
  t.search_timeout_tree = 1 << 14;
  t.search_timeout_same = 1 << 8;
  t.search_timeout_global = 1L << 19;
  t.intel_p2p_overhead = 1.2;  // nccl-model.md: "P2P through an Intel root complex costs 1.2×"
  t.loc_bw = 5000.0;
  t.fallback_bw = 0.1;
  return t;
}
}  // namespace

const Table& default_table() {
  static const Table t = make_2_30_7();
  return t;
}

}  // namespace dlscale::nccl
