// Tree reduction of each work-group's inputs in local memory; work-item 0
// writes the group's sum to out[group].
//   (default)          a barrier after every tree level
//   MISSING_BARRIER    no barrier between the levels
//   DIVERGENT_BARRIER  the barrier inside the `if` only the active half takes
//   UNROLLED_WARP      the last two levels assume work-items run in lock-step
__kernel void reduce(__global const int *in, __global int *out, __local int *tile)
{
  uint lid = get_local_id(0), n = get_local_size(0);
  tile[lid] = in[get_global_id(0)];
  barrier(CLK_LOCAL_MEM_FENCE);
#if defined(UNROLLED_WARP)
  for (uint s = n / 2; s > 2; s >>= 1) {
    if (lid < s)
      tile[lid] += tile[lid + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid < 2) {
    tile[lid] += tile[lid + 2];
    tile[lid] += tile[lid + 1];
  }
#else
  for (uint s = n / 2; s > 0; s >>= 1) {
#if defined(DIVERGENT_BARRIER)
    if (lid < s) {
      tile[lid] += tile[lid + s];
      barrier(CLK_LOCAL_MEM_FENCE);
    }
#else
    if (lid < s)
      tile[lid] += tile[lid + s];
#if !defined(MISSING_BARRIER)
    barrier(CLK_LOCAL_MEM_FENCE);
#endif
#endif
  }
#endif
  if (lid == 0)
    out[get_group_id(0)] = tile[0];
}
