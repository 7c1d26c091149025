// Three-point stencil through a local tile with a one-element halo on each side.
//   (default)        load the tile and its halo, barrier, compute
//   MISSING_BARRIER  compute without waiting for the neighbours' loads
//   OOB_TILE         the right halo is stored one element too far left: it
//                    overwrites the last work-item's element, and the real
//                    halo slot is never written
//   SPLIT_BARRIER    odd work-items wait at barrier(CLK_LOCAL_MEM_FENCE), even
//                    ones at a barrier that also fences global memory
__kernel void stencil1d(__global const int *in, __global int *out, __local int *tile)
{
  int lid = get_local_id(0), n = get_local_size(0);
  int gid = get_global_id(0), size = get_global_size(0);
  tile[lid + 1] = in[gid];
  if (lid == 0) {
    tile[0] = gid > 0 ? in[gid - 1] : 0;
#if defined(OOB_TILE)
    tile[n] = gid + n < size ? in[gid + n] : 0;
#else
    tile[n + 1] = gid + n < size ? in[gid + n] : 0;
#endif
  }
#if defined(SPLIT_BARRIER)
  if (lid % 2)
    barrier(CLK_LOCAL_MEM_FENCE);
  else
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
#elif !defined(MISSING_BARRIER)
  barrier(CLK_LOCAL_MEM_FENCE);
#endif
  out[gid] = tile[lid] + tile[lid + 1] + tile[lid + 2];
}
