// Sum of all inputs: each work-group adds into a local total with local
// atomics, then work-item 0 adds the group's total to *out with a global atomic.
//   (default)             atomics at both levels
//   PLAIN_LOCAL           the local total updated with a plain +=
//   PLAIN_GLOBAL          *out updated with a plain +=
//   MISSING_INIT_BARRIER  no barrier between zeroing the total and adding to it
__kernel void atomic_sum(__global const int *in, __global int *out)
{
  __local int total;
  uint lid = get_local_id(0);
  if (lid == 0)
    total = 0;
#if !defined(MISSING_INIT_BARRIER)
  barrier(CLK_LOCAL_MEM_FENCE);
#endif
#if defined(PLAIN_LOCAL)
  total += in[get_global_id(0)];
#else
  atomic_add(&total, in[get_global_id(0)]);
#endif
  barrier(CLK_LOCAL_MEM_FENCE);
  if (lid == 0) {
#if defined(PLAIN_GLOBAL)
    *out += total;
#else
    atomic_add(out, total);
#endif
  }
}
