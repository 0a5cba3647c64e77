// A block may write another block's shared memory only once that block has
// started: every block arrives at the cluster barrier on entry and waits
// just before its first remote store, so the wait overlaps the global loads
// issued in between. (Later cluster.sync() calls are the next phases.)
#pragma once

namespace fhelium::cuda {

__device__ __forceinline__ void arrive_on_entry() { asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory"); }
__device__ __forceinline__ void wait_for_cluster_entry() { asm volatile("barrier.cluster.wait.aligned;" ::: "memory"); }

}  // namespace fhelium::cuda
