// Work-item 0 of group 0 produces N values and raises a flag; work-item 0 of
// group 1 waits for the flag and copies the values. (Oclgrind runs group 0 to
// completion before group 1 starts, so the consumer finds the flag set.)
//   (default)   the producer fences before raising the flag with an atomic;
//               the consumer polls it with an atomic and fences after
//   NO_FENCE    the flag is atomic but neither side fences
//   PLAIN_FLAG  the flag is a plain variable (fences kept)
#define N 8
__kernel void producer_consumer(__global int *data, __global volatile int *flag,
                                __global int *out)
{
  if (get_global_id(0) == 0) {
    for (int i = 0; i < N; i++)
      data[i] = i * i;
#if !defined(NO_FENCE)
    mem_fence(CLK_GLOBAL_MEM_FENCE);
#endif
#if defined(PLAIN_FLAG)
    *flag = 1;
#else
    atomic_xchg(flag, 1);
#endif
  } else if (get_global_id(0) == get_local_size(0)) {
#if defined(PLAIN_FLAG)
    while (*flag == 0)
      ;
#else
    while (atomic_or(flag, 0) == 0)
      ;
#endif
#if !defined(NO_FENCE)
    mem_fence(CLK_GLOBAL_MEM_FENCE);
#endif
    for (int i = 0; i < N; i++)
      out[i] = data[i];
  }
}
