// Work-item 0 of every work-group adds to a global total inside a critical
// section guarded by a spin lock.
//   (default)  lock with atomic_cmpxchg then a fence; unlock with a fence then atomic_xchg
//   NO_LOCK    no lock around the update
__kernel void spinlock(__global int *lock, __global int *total)
{
  if (get_local_id(0) != 0)
    return;
#if !defined(NO_LOCK)
  while (atomic_cmpxchg(lock, 0, 1) != 0)
    ;
  mem_fence(CLK_GLOBAL_MEM_FENCE);
#endif
  *total += get_group_id(0) + 1;
#if !defined(NO_LOCK)
  mem_fence(CLK_GLOBAL_MEM_FENCE);
  atomic_xchg(lock, 0);
#endif
}
