// One barrier per fence-flag combination. The recorder writes the mask of
// memory spaces each barrier orders from its flags (global 1, shared 2);
// the comment at the end of each barrier line names the mask of its rows.
__kernel void barrier_flags(__global int *buf, __local int *tile)
{
  int lid = get_local_id(0), n = get_local_size(0), gid = get_global_id(0);
  tile[lid] = gid;
  barrier(CLK_LOCAL_MEM_FENCE);  // fence_spaces 2
  buf[gid] = tile[(lid + 1) % n];
  barrier(CLK_GLOBAL_MEM_FENCE);  // fence_spaces 1
  tile[lid] = buf[gid - lid + (lid + 1) % n];
  barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);  // fence_spaces 3
  buf[gid] += tile[(lid + 2) % n];
  barrier(0);  // fence_spaces 0
}
