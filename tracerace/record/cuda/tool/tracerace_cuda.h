// The record of tracerace's CUDA tool library: shared by the host side
// (tracerace_cuda_tool.cpp) and the device patches (tracerace_cuda_patches.cu).
// Mirrored in tracerace/record/cuda/stream.py (RECORD_DTYPE, Kind), which
// documents every field; a test keeps the two in agreement.
#pragma once

#include <stdint.h>

namespace tracerace {

constexpr uint16_t kStreamVersion = 2;

enum Kind : uint8_t {
    // host records
    LAUNCH = 1,
    LAUNCH_END = 2,
    STRING = 3,
    HOST_INIT = 4,
    ALLOC = 5,
    MODULE = 6,
    ERROR = 7,
    // device records
    ACCESS = 16,
    BARRIER = 17,
    SYNCWARP = 18,
    BLOCK_EXIT = 19,
    CP_ASYNC = 20,
    CP_COMMIT = 21,
    CP_WAIT = 22,
    MBARRIER = 23,
    UNFOLLOWED = 24,
    CLUSTER_ARRIVE = 25,
    CLUSTER_WAIT = 26,
    PEER_ACCESS = 27,
    BULK = 28,
};

struct Record {
    uint8_t kind;
    uint8_t space;    // ACCESS: 0 global, 1 shared, 2 local; LAUNCH: cluster x;
                      // MBARRIER with kPeerMbarrier: the owner's rank;
                      // BULK: multicast ctaMask bits 0-7
    uint8_t flags;    // ACCESS, PEER_ACCESS: Sanitizer_DeviceMemoryFlags; MBARRIER: kPeerMbarrier; BARRIER:
                      // Sanitizer_BarrierFlags; LAUNCH: cluster y; BULK: ctaMask bits 8-15
    uint8_t aux;      // MBARRIER: the action; UNFOLLOWED, BULK: the Sanitizer_InstructionId;
                      // LAUNCH: cluster z
    uint32_t size;
    uint32_t block;   // linear block index in the grid
    uint32_t thread;  // linear thread index in the block
    uint64_t addr;
    uint64_t addr2;
    uint64_t pc;
    uint64_t arg;
};
static_assert(sizeof(Record) == 48, "Record is 48 bytes");

// A shared::cluster address in a record: the owning block's rank in the
// cluster in bits 32-39, the offset in that block's shared window below.
constexpr int kRankShift = 32;

// MBARRIER flags: the mbarrier is another block's of the cluster, whose rank is
// in space (the record's addr is the offset in that block's window).
constexpr uint8_t kPeerMbarrier = 1;

// What the patches receive as userdata: the launch's device buffer.
struct DeviceBuffer {
    unsigned long long next;      // slots reserved so far (may pass capacity: then lost)
    unsigned long long capacity;  // records the buffer holds
    Record* records;
};

}  // namespace tracerace
