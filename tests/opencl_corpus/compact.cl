// Stream compaction: every work-item with an even input claims the next
// output slot from a global counter.
//   (default)      the slot comes from atomic_inc
//   PLAIN_COUNTER  the counter is read and incremented with plain accesses
__kernel void compact(__global const int *in, __global int *out, __global int *count)
{
  int value = in[get_global_id(0)];
  if (value % 2)
    return;
#if defined(PLAIN_COUNTER)
  int slot = *count;
  *count = slot + 1;
#else
  int slot = atomic_inc(count);
#endif
  out[slot] = value;
}
