// Histogram of 4 bins: each work-group counts into local bins with local
// atomics, then work-items 0..3 add the group's bins to the global histogram
// with global atomics.
//   (default)     atomics at both levels
//   PLAIN_LOCAL   local bins incremented with a plain ++
//   PLAIN_GLOBAL  global bins updated with a plain +=
#define BINS 4
__kernel void histogram(__global const uint *in, __global uint *hist)
{
  __local uint bins[BINS];
  uint lid = get_local_id(0);
  if (lid < BINS)
    bins[lid] = 0;
  barrier(CLK_LOCAL_MEM_FENCE);
  uint bin = in[get_global_id(0)] % BINS;
#if defined(PLAIN_LOCAL)
  bins[bin]++;
#else
  atomic_inc(&bins[bin]);
#endif
  barrier(CLK_LOCAL_MEM_FENCE);
  if (lid < BINS) {
#if defined(PLAIN_GLOBAL)
    hist[lid] += bins[lid];
#else
    atomic_add(&hist[lid], bins[lid]);
#endif
  }
}
