// out[i] = in[i + 1] through a local tile of n + 1 elements; work-item 0 also
// loads the element after the group.
//   (default)     the extra element is loaded
//   MISSING_HALO  it is not: the last work-item reads a tile slot nobody wrote
__kernel void shift(__global const int *in, __global int *out, __local int *tile)
{
  int lid = get_local_id(0), n = get_local_size(0), gid = get_global_id(0);
  tile[lid] = in[gid];
#if !defined(MISSING_HALO)
  if (lid == 0)
    tile[n] = gid + n < get_global_size(0) ? in[gid + n] : 0;
#endif
  barrier(CLK_LOCAL_MEM_FENCE);
  out[gid] = tile[lid + 1];
}
