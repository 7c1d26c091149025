// Bitonic sort of each work-group's inputs in local memory.
//   (default)        a barrier after every compare-exchange step
//   MISSING_BARRIER  no barrier between the steps
__kernel void bitonic(__global const int *in, __global int *out, __local int *tile)
{
  uint lid = get_local_id(0), n = get_local_size(0);
  tile[lid] = in[get_global_id(0)];
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint k = 2; k <= n; k <<= 1) {
    for (uint j = k >> 1; j > 0; j >>= 1) {
      uint partner = lid ^ j;
      if (partner > lid) {
        int a = tile[lid], b = tile[partner];
        bool ascending = (lid & k) == 0;
        if ((a > b) == ascending) {
          tile[lid] = b;
          tile[partner] = a;
        }
      }
#if !defined(MISSING_BARRIER)
      barrier(CLK_LOCAL_MEM_FENCE);
#endif
    }
  }
  out[get_global_id(0)] = tile[lid];
}
