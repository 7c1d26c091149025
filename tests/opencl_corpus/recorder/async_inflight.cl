// async_work_group_copy is in flight from its call to wait_group_events.
// Each work-group copies its slice of `in` into a local tile, then every
// work-item writes twice its right neighbour's element.
//   (default)   wait_group_events, then read the tile
//   EARLY_READ  read the tile after a barrier but before the wait: the copy
//               may still be writing it (a race on a real device)
__kernel void async_inflight(__global const float *in, __global float *out,
                             __local float *tile)
{
  uint lid = get_local_id(0), n = get_local_size(0), base = get_group_id(0) * n;
  event_t copied = async_work_group_copy(tile, in + base, n, 0);
#if defined(EARLY_READ)
  barrier(CLK_LOCAL_MEM_FENCE);
  out[base + lid] = 2.0f * tile[(lid + 1) % n];  // early read
  wait_group_events(1, &copied);
#else
  wait_group_events(1, &copied);
  out[base + lid] = 2.0f * tile[(lid + 1) % n];
#endif
}
