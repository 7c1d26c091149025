// GPU session kernel (sm_90a): a warp-specialized TMA load pipeline. Warp 0
// (one elected thread) loads 2-D tiles of a float matrix by tensor TMA
// (cp.async.bulk.tensor) into a two-slot ring of shared tiles, each slot with a
// "full" mbarrier the copy completes its bytes on and an "empty" mbarrier the
// consumers arrive on; warps 1-4 sum each tile. With `nowait` the consumers
// skip their wait on "full" and read tiles the TMA may still be writing.
// Usage: ./hopper_tma wait|nowait     (nvcc -arch=sm_90a)
#include <cstdio>
#include <cstring>
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

constexpr int TILE = 32;           // a tile is TILE x TILE floats (4 KiB)
constexpr int TILES = 8;
constexpr int SLOTS = 2;
constexpr int CONSUMERS = 4 * 32;  // warps 1-4

__device__ __forceinline__ unsigned smem(const void* p)
{
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_init(unsigned long long* bar, unsigned count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(smem(bar)), "r"(count));
}

__device__ __forceinline__ void mbar_arrive(unsigned long long* bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(smem(bar)) : "memory");
}

__device__ __forceinline__ void mbar_expect_tx(unsigned long long* bar, unsigned bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                 :: "r"(smem(bar)), "r"(bytes) : "memory");
}

__device__ __forceinline__ void mbar_wait(unsigned long long* bar, unsigned parity)
{
    asm volatile(
        "{\n .reg .pred p;\n"
        "retry: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
        " @!p bra retry;\n}" :: "r"(smem(bar)), "r"(parity) : "memory");
}

__global__ void tma_pipeline(const __grid_constant__ CUtensorMap map, float* out, bool wait)
{
    __shared__ alignas(128) float tile[SLOTS][TILE * TILE];
    __shared__ alignas(8) unsigned long long full[SLOTS], empty[SLOTS];
    const int t = threadIdx.x;
    if (t == 0) {
        for (int s = 0; s < SLOTS; ++s) {
            mbar_init(&full[s], 1);
            mbar_init(&empty[s], CONSUMERS);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (t < 32) {                       // the producer warp
        if (t == 0) {
            for (int k = 0; k < TILES; ++k) {
                const int s = k % SLOTS;
                mbar_wait(&empty[s], ((k / SLOTS) + 1) & 1);
                mbar_expect_tx(&full[s], sizeof(tile[s]));
                asm volatile(
                    "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                    " [%0], [%1, {%2, %3}], [%4];"
                    :: "r"(smem(tile[s])), "l"(&map), "r"(0), "r"(k * TILE),
                       "r"(smem(&full[s])) : "memory");
            }
        }
        return;
    }
    const int c = t - 32;
    for (int k = 0; k < TILES; ++k) {
        const int s = k % SLOTS;
        if (wait) mbar_wait(&full[s], (k / SLOTS) & 1);
        float sum = 0.f;
        for (int i = c; i < TILE * TILE; i += CONSUMERS) sum += tile[s][i];
        out[k * CONSUMERS + c] = sum;
        mbar_arrive(&empty[s]);
    }
}

int main(int argc, char** argv)
{
    const bool wait = argc > 1 && std::strcmp(argv[1], "wait") == 0;
    const size_t rows = TILES * TILE, bytes = rows * TILE * sizeof(float);
    float *in, *out;
    cudaMalloc(&in, bytes);
    cudaMalloc(&out, TILES * CONSUMERS * sizeof(float));
    cudaMemset(in, 0, bytes);
    CUtensorMap map;
    cuuint64_t dims[2] = {TILE, rows};
    cuuint64_t strides[1] = {TILE * sizeof(float)};
    cuuint32_t box[2] = {TILE, TILE};
    cuuint32_t elem[2] = {1, 1};
    // The driver's entry point through the runtime: no link against libcuda.
    PFN_cuTensorMapEncodeTiled_v12000 encode = nullptr;
    cudaDriverEntryPointQueryResult found;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled",
                                         reinterpret_cast<void**>(&encode), 12000,
                                         cudaEnableDefault, &found) != cudaSuccess
        || found != cudaDriverEntryPointSuccess) {
        std::fprintf(stderr, "no cuTensorMapEncodeTiled in this driver\n");
        return 1;
    }
    if (encode(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, in, dims, strides, box,
                               elem, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                               CU_TENSOR_MAP_L2_PROMOTION_NONE,
                               CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS) {
        std::fprintf(stderr, "cuTensorMapEncodeTiled failed\n");
        return 1;
    }
    tma_pipeline<<<1, 32 + CONSUMERS>>>(map, out, wait);
    return cudaDeviceSynchronize() == cudaSuccess ? 0 : 1;
}
