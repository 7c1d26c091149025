// GPU session kernel: a shared-memory tree reduction, with or without
// __syncthreads between the steps. Usage: ./reduce sync|nosync
#include <cstdio>
#include <cstring>

constexpr int N = 256;

__global__ void reduce(const float* in, float* out, bool sync)
{
    __shared__ float s[N];
    const int t = threadIdx.x;
    s[t] = in[blockIdx.x * N + t];
    if (sync) __syncthreads();
    for (int stride = N / 2; stride > 0; stride /= 2) {
        if (t < stride) s[t] += s[t + stride];
        if (sync) __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = s[0];
}

int main(int argc, char** argv)
{
    const bool sync = argc > 1 && std::strcmp(argv[1], "sync") == 0;
    float host[4 * N];
    for (int i = 0; i < 4 * N; ++i) host[i] = 1.0f;
    float *in, *out;
    cudaMalloc(&in, sizeof host);
    cudaMalloc(&out, 4 * sizeof(float));
    cudaMemcpy(in, host, sizeof host, cudaMemcpyHostToDevice);
    reduce<<<4, N>>>(in, out, sync);
    float result[4];
    cudaMemcpy(result, out, sizeof result, cudaMemcpyDeviceToHost);
    std::printf("%g %g %g %g\n", result[0], result[1], result[2], result[3]);
    return cudaDeviceSynchronize() == cudaSuccess ? 0 : 1;
}
