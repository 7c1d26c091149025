// GPU session kernel (sm_90a): a ring of two shared staging buffers drained
// to global memory by non-tensor bulk copies (cp.async.bulk.global.shared::cta
// with bulk groups). Every thread writes its element of the buffer (generic
// proxy), the block synchronizes, and thread 0 issues the bulk store (async
// proxy), which needs fence.proxy.async.shared::cta between the writes and the
// copy; before a buffer is refilled, cp.async.bulk.wait_group.read retires the
// copy that reads it. With `nofence` the fence is left out.
// Usage: ./hopper_bulk_ring fence|nofence     (nvcc -arch=sm_90a)
#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>

constexpr int THREADS = 128;
constexpr int CHUNKS = 8;

__global__ void bulk_ring(float* out, bool fence)
{
    __shared__ alignas(128) float buf[2][THREADS];
    const int t = threadIdx.x;
    for (int k = 0; k < CHUNKS; ++k) {
        const int s = k % 2;
        if (t == 0 && k >= 2)
            asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
        __syncthreads();
        buf[s][t] = static_cast<float>(k * THREADS + t);
        if (fence) asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        __syncthreads();
        if (t == 0) {
            const unsigned src = static_cast<unsigned>(__cvta_generic_to_shared(buf[s]));
            asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;"
                         :: "l"(out + k * THREADS), "r"(src), "r"(THREADS * 4) : "memory");
            asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        }
    }
    if (t == 0) asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}

int main(int argc, char** argv)
{
    const bool fence = argc > 1 && std::strcmp(argv[1], "fence") == 0;
    float* out;
    cudaMalloc(&out, CHUNKS * THREADS * sizeof(float));
    bulk_ring<<<1, THREADS>>>(out, fence);
    return cudaDeviceSynchronize() == cudaSuccess ? 0 : 1;
}
