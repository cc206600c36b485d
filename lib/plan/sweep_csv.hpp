// The CSV header of a sweep's output, shared by the printer and the merge of sharded parts. Internal to
// lib/plan.
#pragma once

#include <string_view>

namespace dlscale::sweep_detail {

/// The first line of a CSV sweep (and of each CSV part of a sharded one).
inline constexpr std::string_view kCsvHeader =
    "cluster,model,framework,precision,batch_per_gpu,bucket,links,gpus,nodes,iteration_time_s,"
    "throughput_samples_per_s,speedup,efficiency,hiding_case,bottleneck,bottleneck_share,comm_s,comm_exposed_s,"
    "memory_per_gpu_bytes,memory_fits,train_hours,gpu_hours,cost,currency,throughput_tokens_per_s,tokens_per_s_per_gpu,mfu,"
    "hfu\n";

/// The header of a sweep with a `layout` axis (SweepSpec::layout_columns): kCsvHeader with the layout's columns.
inline constexpr std::string_view kCsvLayoutHeader =
    "cluster,model,framework,precision,batch_per_gpu,bucket,links,gpus,nodes,iteration_time_s,"
    "throughput_samples_per_s,speedup,efficiency,hiding_case,bottleneck,bottleneck_share,comm_s,comm_exposed_s,"
    "memory_per_gpu_bytes,memory_fits,train_hours,gpu_hours,cost,currency,throughput_tokens_per_s,tokens_per_s_per_gpu,mfu,"
    "hfu,tp,pp,vp,cp,ep,sp,schedule,micro_batches,global_batch,error\n";

}  // namespace dlscale::sweep_detail
