// Hillis-Steele inclusive scan of each work-group's inputs in one local array:
// every step reads a neighbour, waits, then updates its own element.
//   (default)             a barrier between the read and the update of each step
//   MISSING_READ_BARRIER  no barrier between them
__kernel void scan_hs(__global const int *in, __global int *out, __local int *tile)
{
  uint lid = get_local_id(0), n = get_local_size(0);
  tile[lid] = in[get_global_id(0)];
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint offset = 1; offset < n; offset <<= 1) {
    int left = lid >= offset ? tile[lid - offset] : 0;
#if !defined(MISSING_READ_BARRIER)
    barrier(CLK_LOCAL_MEM_FENCE);
#endif
    tile[lid] += left;
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  out[get_global_id(0)] = tile[lid];
}
