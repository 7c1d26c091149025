// GPU session kernel (sm_90a): a multicast tensor-TMA load into a cluster of
// two blocks, whose consumers may read a shared tile nothing has written yet.
// Each block initializes its "full" mbarrier and arms it with the tile's bytes
// (arrive.expect_tx); a cluster barrier makes both barriers visible to the
// cluster before the rank-0 block issues one cp.async.bulk.tensor with
// .multicast::cluster (mask 0b11): the tile lands at the same shared offset in
// both blocks and its bytes complete on each block's own mbarrier. The
// consumers (every thread) sum their block's copy. With `wait` they first wait
// on their block's mbarrier; with `nowait` they read at once, so a read may
// come before any write of the tile (the multicast's write into a peer block
// is the one nothing in that block orders). One thread per block waits on the
// mbarrier before the last cluster barrier in both forms, so no block exits
// while a copy into it is in flight.
// Usage: ./hopper_multicast wait|nowait     (nvcc -arch=sm_90a)
#include <cooperative_groups.h>
#include <cstdio>
#include <cstring>
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

namespace cg = cooperative_groups;
constexpr int TILE = 32;     // TILE x TILE floats, 4 KiB
constexpr int THREADS = 128;

__device__ __forceinline__ unsigned smem_addr(const void* p)
{
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void wait_phase(unsigned long long* bar, unsigned parity)
{
    asm volatile(
        "{\n .reg .pred done;\n"
        "again: mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
        " @!done bra again;\n}" :: "r"(smem_addr(bar)), "r"(parity) : "memory");
}

__global__ void __cluster_dims__(2, 1, 1)
multicast_tile(const __grid_constant__ CUtensorMap map, float* out, bool wait)
{
    __shared__ alignas(128) float tile[TILE * TILE];
    __shared__ alignas(8) unsigned long long full;
    cg::cluster_group cluster = cg::this_cluster();
    const unsigned rank = cluster.block_rank();
    const int t = threadIdx.x;
    if (t == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(smem_addr(&full)));
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                     :: "r"(smem_addr(&full)), "r"(static_cast<unsigned>(sizeof(tile)))
                     : "memory");
    }
    cluster.sync();  // both mbarriers initialized and armed before the copy
    if (rank == 0 && t == 0) {
        const unsigned short both = 0x3;
        asm volatile(
            "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
            ".multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;"
            :: "r"(smem_addr(tile)), "l"(&map), "r"(0), "r"(0), "r"(smem_addr(&full)),
               "h"(both) : "memory");
    }
    if (wait) wait_phase(&full, 0);
    float sum = 0.f;
    for (int i = t; i < TILE * TILE; i += THREADS) sum += tile[i];
    out[rank * THREADS + t] = sum;
    if (t == 0 && !wait) wait_phase(&full, 0);
    cluster.sync();  // no block leaves while the other's copy may still land
}

int main(int argc, char** argv)
{
    const bool wait = argc > 1 && std::strcmp(argv[1], "wait") == 0;
    const size_t bytes = TILE * TILE * sizeof(float);
    float *in, *out;
    cudaMalloc(&in, bytes);
    cudaMalloc(&out, 2 * THREADS * sizeof(float));
    cudaMemset(in, 0, bytes);
    CUtensorMap map;
    cuuint64_t dims[2] = {TILE, TILE};
    cuuint64_t strides[1] = {TILE * sizeof(float)};
    cuuint32_t box[2] = {TILE, TILE};
    cuuint32_t elem[2] = {1, 1};
    PFN_cuTensorMapEncodeTiled_v12000 encode = nullptr;
    cudaDriverEntryPointQueryResult found;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled",
                                         reinterpret_cast<void**>(&encode), 12000,
                                         cudaEnableDefault, &found) != cudaSuccess
        || found != cudaDriverEntryPointSuccess) {
        std::fprintf(stderr, "no cuTensorMapEncodeTiled in this driver\n");
        return 1;
    }
    if (encode(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, in, dims, strides, box, elem,
               CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
               CU_TENSOR_MAP_L2_PROMOTION_NONE,
               CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS) {
        std::fprintf(stderr, "cuTensorMapEncodeTiled failed\n");
        return 1;
    }
    multicast_tile<<<2, THREADS>>>(map, out, wait);
    return cudaDeviceSynchronize() == cudaSuccess ? 0 : 1;
}
