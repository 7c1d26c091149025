// GPU session kernel (sm_90): a cluster of two blocks exchanging through
// distributed shared memory. Each block writes its shared buffer, the cluster
// synchronizes (barrier.cluster.arrive.release / wait.acquire), and each block
// reads its peer's buffer through cluster.map_shared_rank; a second cluster
// barrier keeps the buffers alive until both have read. With `nosync` the
// first cluster barrier is left out: the peer's buffer may not be written yet.
// Usage: ./hopper_cluster sync|nosync     (nvcc -arch=sm_90a)
#include <cooperative_groups.h>
#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>

namespace cg = cooperative_groups;
constexpr int THREADS = 128;

__global__ void __cluster_dims__(2, 1, 1) exchange(float* out, bool sync)
{
    __shared__ float buf[THREADS];
    cg::cluster_group cluster = cg::this_cluster();
    const unsigned rank = cluster.block_rank();
    const int t = threadIdx.x;
    buf[t] = static_cast<float>(rank * THREADS + t);
    if (sync) cluster.sync();
    const float* peer = cluster.map_shared_rank(buf, rank ^ 1);
    out[rank * THREADS + t] = peer[(t + 1) % THREADS];
    cluster.sync();
}

int main(int argc, char** argv)
{
    const bool sync = argc > 1 && std::strcmp(argv[1], "sync") == 0;
    float* out;
    cudaMalloc(&out, 2 * THREADS * sizeof(float));
    exchange<<<2, THREADS>>>(out, sync);
    return cudaDeviceSynchronize() == cudaSuccess ? 0 : 1;
}
