// Histogram of 4 bins counted straight into global memory (driven by the C
// host program histogram_host.c).
//   (default)  atomic_inc on the global bin
//   PLAIN_RMW  a plain ++ on the global bin
#define BINS 4
__kernel void histogram_global(__global const uint *in, __global uint *hist)
{
  uint bin = in[get_global_id(0)] % BINS;
#if defined(PLAIN_RMW)
  hist[bin]++;
#else
  atomic_inc(&hist[bin]);
#endif
}
