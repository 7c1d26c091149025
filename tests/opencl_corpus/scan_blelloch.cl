// Blelloch work-efficient exclusive scan of each work-group's 2n inputs in
// local memory (each work-item handles two elements): up-sweep, clear the
// last element, down-sweep.
//   (default)                  a barrier after every level of both sweeps
//   MISSING_DOWNSWEEP_BARRIER  no barrier between the levels of the down-sweep
__kernel void scan_blelloch(__global const int *in, __global int *out, __local int *tile)
{
  uint lid = get_local_id(0), n = 2 * get_local_size(0);
  uint base = get_group_id(0) * n;
  tile[2 * lid] = in[base + 2 * lid];
  tile[2 * lid + 1] = in[base + 2 * lid + 1];
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint d = 1; d < n; d <<= 1) {
    uint i = (lid + 1) * 2 * d - 1;
    if (i < n)
      tile[i] += tile[i - d];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0)
    tile[n - 1] = 0;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint d = n / 2; d >= 1; d >>= 1) {
    uint i = (lid + 1) * 2 * d - 1;
    if (i < n) {
      int t = tile[i - d];
      tile[i - d] = tile[i];
      tile[i] += t;
    }
#if !defined(MISSING_DOWNSWEEP_BARRIER)
    barrier(CLK_LOCAL_MEM_FENCE);
#endif
  }
  out[base + 2 * lid] = tile[2 * lid];
  out[base + 2 * lid + 1] = tile[2 * lid + 1];
}
