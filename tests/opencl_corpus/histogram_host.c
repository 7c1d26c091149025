/* A minimal OpenCL host program in C: runs histogram_global.cl on 16 inputs
 * in work-groups of 8 and prints the histogram. Usage: histogram_host KERNEL.cl */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>

#define N 16
#define BINS 4

static void check(cl_int err, const char *what)
{
  if (err != CL_SUCCESS) {
    fprintf(stderr, "%s failed: %d\n", what, err);
    exit(1);
  }
}

static char *read_file(const char *path)
{
  FILE *f = fopen(path, "rb");
  if (!f) {
    perror(path);
    exit(1);
  }
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  rewind(f);
  char *text = calloc(size + 1, 1);
  if (fread(text, 1, size, f) != (size_t)size)
    exit(1);
  fclose(f);
  return text;
}

static cl_kernel build(cl_context context, cl_device_id device, const char *path)
{
  cl_int err;
  const char *source = read_file(path);
  cl_program program = clCreateProgramWithSource(context, 1, &source, NULL, &err);
  check(err, "clCreateProgramWithSource");
  check(clBuildProgram(program, 1, &device, "", NULL, NULL), "clBuildProgram");
  cl_kernel kernel = clCreateKernel(program, "histogram_global", &err);
  check(err, "clCreateKernel");
  return kernel;
}

int main(int argc, char **argv)
{
  if (argc != 2) {
    fprintf(stderr, "usage: %s KERNEL.cl\n", argv[0]);
    return 2;
  }
  cl_platform_id platform;
  cl_device_id device;
  cl_int err;
  check(clGetPlatformIDs(1, &platform, NULL), "clGetPlatformIDs");
  check(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, NULL), "clGetDeviceIDs");
  cl_context context = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
  check(err, "clCreateContext");
  cl_command_queue queue = clCreateCommandQueue(context, device, 0, &err);
  check(err, "clCreateCommandQueue");
  cl_kernel kernel = build(context, device, argv[1]);

  cl_uint in[N], hist[BINS] = {0};
  for (int i = 0; i < N; i++)
    in[i] = 3 * i;
  cl_mem in_buf = clCreateBuffer(context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                                 sizeof in, in, &err);
  check(err, "clCreateBuffer(in)");
  cl_mem hist_buf = clCreateBuffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                                   sizeof hist, hist, &err);
  check(err, "clCreateBuffer(hist)");
  check(clSetKernelArg(kernel, 0, sizeof in_buf, &in_buf), "clSetKernelArg(0)");
  check(clSetKernelArg(kernel, 1, sizeof hist_buf, &hist_buf), "clSetKernelArg(1)");
  size_t global = N, local = 8;
  check(clEnqueueNDRangeKernel(queue, kernel, 1, NULL, &global, &local, 0, NULL, NULL),
        "clEnqueueNDRangeKernel");
  check(clEnqueueReadBuffer(queue, hist_buf, CL_TRUE, 0, sizeof hist, hist, 0, NULL, NULL),
        "clEnqueueReadBuffer");
  for (int b = 0; b < BINS; b++)
    printf("bin %d: %u\n", b, hist[b]);
  return 0;
}
