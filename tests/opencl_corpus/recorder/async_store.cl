// async_work_group_copy from local to global memory. Each work-item fills
// its slot of a local tile; after a barrier the group copies the tile out.
//   (default)  the tile is left alone until wait_group_events
//   OVERWRITE  work-items write the tile again before the wait: the copy may
//              still be reading it (a race on a real device)
__kernel void async_store(__global float *out, __local float *tile)
{
  uint lid = get_local_id(0), n = get_local_size(0), base = get_group_id(0) * n;
  tile[lid] = (float)(base + lid);
  barrier(CLK_LOCAL_MEM_FENCE);
  event_t stored = async_work_group_copy(out + base, tile, n, 0);
#if defined(OVERWRITE)
  tile[lid] = 0.0f;  // overwrite
#endif
  wait_group_events(1, &stored);
}
