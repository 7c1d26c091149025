// GPU session kernel: a shared-memory tree reduction, with or without
// __syncthreads between the steps; `exit`: with them, but the upper half of the
// threads return before the tree (later barriers count them as arrived).
// Usage: ./reduce sync|nosync|exit [blocks]
// (4 blocks by default); prints the kernel's time (CUDA events) on stderr.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

constexpr int N = 256;

__global__ void reduce(const float* in, float* out, bool sync, bool exit)
{
    __shared__ float s[N];
    const int t = threadIdx.x;
    s[t] = in[blockIdx.x * N + t];
    if (sync) __syncthreads();
    if (exit && t >= N / 2) return;
    for (int stride = N / 2; stride > 0; stride /= 2) {
        if (t < stride) s[t] += s[t + stride];
        if (sync) __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = s[0];
}

int main(int argc, char** argv)
{
    const bool exit = argc > 1 && std::strcmp(argv[1], "exit") == 0;
    const bool sync = exit || (argc > 1 && std::strcmp(argv[1], "sync") == 0);
    const int blocks = argc > 2 ? std::atoi(argv[2]) : 4;
    std::vector<float> host(static_cast<size_t>(blocks) * N, 1.0f);
    float *in, *out;
    cudaMalloc(&in, host.size() * sizeof(float));
    cudaMalloc(&out, blocks * sizeof(float));
    cudaMemcpy(in, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice);
    cudaEvent_t start, stop;
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
    cudaEventRecord(start);
    reduce<<<blocks, N>>>(in, out, sync, exit);
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    std::vector<float> result(blocks);
    cudaMemcpy(result.data(), out, blocks * sizeof(float), cudaMemcpyDeviceToHost);
    std::printf("%g %g\n", result[0], result[blocks - 1]);
    std::fprintf(stderr, "kernel_ms=%.3f\n", ms);
    return cudaDeviceSynchronize() == cudaSuccess ? 0 : 1;
}
