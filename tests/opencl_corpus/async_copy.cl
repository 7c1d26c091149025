// Each work-group copies its slice of `in` into a local tile with
// async_work_group_copy, then every work-item scales its right neighbour.
//   (default)     wait_group_events before using the tile
//   MISSING_WAIT  no wait: the copy is never completed
__kernel void async_copy(__global const float *in, __global float *out, __local float *tile)
{
  uint lid = get_local_id(0), n = get_local_size(0), base = get_group_id(0) * n;
  event_t copied = async_work_group_copy(tile, in + base, n, 0);
#if !defined(MISSING_WAIT)
  wait_group_events(1, &copied);
#endif
  out[base + lid] = 2.0f * tile[(lid + 1) % n];
}
