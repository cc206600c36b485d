// The kernel parameters as a framework runs its kernels (eqs. K18 and K20), for the passes timed outside the kernel
// model's layers (lib/parallel's CP merges, eq. P15c).
#pragma once

#include "dlscale/compute.hpp"
#include "dlscale/kernels.hpp"

namespace dlscale {

/// Eqs. K18 and K20: the kernel parameters as the framework runs its kernels. Its memory traffic moves at the
/// streaming rate (copy_efficiency) where its memory-bound kernels stream; each kernel costs the GPU the launch gap,
/// not the fitted overhead (which carries eager PyTorch's host cost), where the host's issue cost is counted apart.
KernelParams executed_params(const KernelParams& kp, const KernelExecution& x);

}  // namespace dlscale
