// Work-items of a group exchange values through global memory: each stores
// its own, waits at a barrier, and reads its right neighbour's.
//   (default)         barrier(CLK_GLOBAL_MEM_FENCE)
//   LOCAL_FENCE_ONLY  barrier(CLK_LOCAL_MEM_FENCE), which in OpenCL 1.2 does
//                     not order global memory
__kernel void exchange(__global int *buf, __global int *out)
{
  int lid = get_local_id(0), n = get_local_size(0), gid = get_global_id(0);
  buf[gid] = 3 * gid;
#if defined(LOCAL_FENCE_ONLY)
  barrier(CLK_LOCAL_MEM_FENCE);
#else
  barrier(CLK_GLOBAL_MEM_FENCE);
#endif
  out[gid] = buf[gid - lid + (lid + 1) % n];
}
