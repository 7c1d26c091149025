// Nested loops over private variables, with an early return from the inner
// loop. Built with -cl-opt-disable every private variable stays in memory, so
// each iteration is several private loads and stores: the events grow with
// ROUNDS (a build option), the recording's memory must not.
#ifndef ROUNDS
#define ROUNDS 4
#endif

__kernel void private_loops(__global int *out)
{
  int id = get_global_id(0);
  int total = 0;
  for (int round = 0; round < ROUNDS; round++)
  {
    int digits[4];
    for (int k = 0; k < 4; k++)
    {
      digits[k] = (id + round * k) & 7;
      if (digits[k] == 99)
        return;
      total += digits[k];
    }
  }
  out[id] = total;
}
