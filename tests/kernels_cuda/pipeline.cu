// GPU session kernel: a two-stage cp.async pipeline over tiles of 16-byte
// vectors, with or without cp.async.wait_group before the tile is read.
// Usage: ./pipeline wait|nowait   (sm_80 or newer)
#include <cstdio>
#include <cstring>
#include <cuda_pipeline.h>

constexpr int THREADS = 128;
constexpr int TILES = 8;

__global__ void pipeline(const float4* in, float4* out, bool wait)
{
    __shared__ float4 tile[2][THREADS];
    const int t = threadIdx.x;
    __pipeline_memcpy_async(&tile[0][t], &in[t], sizeof(float4));
    __pipeline_commit();
    for (int k = 0; k < TILES; ++k) {
        if (k + 1 < TILES)
            __pipeline_memcpy_async(&tile[(k + 1) % 2][t], &in[(k + 1) * THREADS + t],
                                    sizeof(float4));
        __pipeline_commit();
        if (wait) __pipeline_wait_prior(1);
        __syncthreads();
        const float4 v = tile[k % 2][(t + 1) % THREADS];   // a neighbour's element
        out[k * THREADS + t] = v;
        __syncthreads();
    }
}

int main(int argc, char** argv)
{
    const bool wait = argc > 1 && std::strcmp(argv[1], "wait") == 0;
    const size_t bytes = TILES * THREADS * sizeof(float4);
    float4 *in, *out;
    cudaMalloc(&in, bytes);
    cudaMalloc(&out, bytes);
    cudaMemset(in, 0, bytes);
    pipeline<<<1, THREADS>>>(in, out, wait);
    return cudaDeviceSynchronize() == cudaSuccess ? 0 : 1;
}
