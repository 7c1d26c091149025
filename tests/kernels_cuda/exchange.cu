// GPU session kernel: threads exchange shared-memory values through a
// cuda::barrier (an mbarrier on sm_80 and newer): each writes its element,
// arrives, and reads its neighbour's, after waiting on the arrival token
// (`wait`) or not (`nowait`). Usage: ./exchange wait|nowait
#include <cstdio>
#include <cstring>
#include <cuda/barrier>
#include <utility>

constexpr int THREADS = 128;

#pragma nv_diag_suppress static_var_with_dynamic_init

__global__ void exchange(const float* in, float* out, bool wait)
{
    __shared__ float s[THREADS];
    __shared__ cuda::barrier<cuda::thread_scope_block> bar;
    const int t = threadIdx.x;
    if (t == 0) init(&bar, blockDim.x);
    __syncthreads();
    s[t] = in[t];
    auto token = bar.arrive();
    if (wait) bar.wait(std::move(token));
    out[t] = s[(t + 1) % THREADS];
}

int main(int argc, char** argv)
{
    const bool wait = argc > 1 && std::strcmp(argv[1], "wait") == 0;
    float *in, *out;
    cudaMalloc(&in, THREADS * sizeof(float));
    cudaMalloc(&out, THREADS * sizeof(float));
    cudaMemset(in, 0, THREADS * sizeof(float));
    exchange<<<1, THREADS>>>(in, out, wait);
    return cudaDeviceSynchronize() == cudaSuccess ? 0 : 1;
}
