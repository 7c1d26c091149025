// Device patches of tracerace's CUDA tool library, compiled with
// `nvcc --fatbin --compile-as-tools-patch` and loaded by the host side with
// sanitizerAddPatchesFromFile. Each instrumented instruction calls one of
// these functions (their signatures are the Sanitizer*Callback types of
// sanitizer_patching.h) before it executes; each writes one Record into the
// launch's buffer. The slot comes from one atomic counter per launch, so a
// thread's records keep its program order and every record a thread writes
// before a barrier precedes the records of the threads the barrier releases.
// A full buffer keeps counting, so the host knows how many records were lost
// and refuses the launch rather than presenting part of it.
#include <sanitizer_patching.h>

#include "tracerace_cuda.h"

using tracerace::DeviceBuffer;
using tracerace::Record;

static __device__ __forceinline__ Record* reserve(void* userdata, uint8_t kind, uint64_t pc)
{
    auto* buffer = static_cast<DeviceBuffer*>(userdata);
    const unsigned long long slot = atomicAdd(&buffer->next, 1ULL);
    if (slot >= buffer->capacity)
        return nullptr;
    Record* r = &buffer->records[slot];
    r->kind = kind;
    r->space = 0;
    r->flags = 0;
    r->aux = 0;
    r->size = 0;
    r->block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    r->thread = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    r->addr = 0;
    r->addr2 = 0;
    r->pc = pc;
    r->arg = 0;
    return r;
}

// A shared::cluster address (what the bulk copy, async store and remote access
// callbacks report) as the record holds it: the owning block's rank in the
// cluster << kRankShift | the offset in that block's shared window.
// getctarank names the block; mapa of offset 0 gives the start of its window.
// Before sm_90 there are no clusters: the address is the block's own offset.
static __device__ __forceinline__ uint64_t cluster_address(uint32_t address)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    uint32_t rank, base;
    asm volatile("getctarank.shared::cluster.u32 %0, %1;" : "=r"(rank) : "r"(address));
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(base) : "r"(0u), "r"(rank));
    return static_cast<uint64_t>(rank) << tracerace::kRankShift | (address - base);
#else
    return address;
#endif
}

// The executing block's rank in its cluster (0 outside a cluster, and before sm_90).
static __device__ __forceinline__ uint32_t own_rank()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    uint32_t rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    return rank;
#else
    return 0;
#endif
}

static __device__ __forceinline__ SanitizerPatchResult access(
    void* userdata, uint64_t pc, void* ptr, uint32_t size, uint32_t flags, uint8_t space)
{
    if (Record* r = reserve(userdata, tracerace::ACCESS, pc)) {
        r->space = space;
        r->flags = static_cast<uint8_t>(flags);
        r->size = size;
        r->addr = reinterpret_cast<uint64_t>(ptr);
    }
    return SANITIZER_PATCH_SUCCESS;
}

extern "C" __device__ __noinline__ SanitizerPatchResult tracerace_global_access(
    void* userdata, uint64_t pc, void* ptr, uint32_t size, uint32_t flags, const void*)
{
    return access(userdata, pc, ptr, size, flags, 0);
}

// A PEER_ACCESS record: an access at ``where`` (cluster_address of ``ptr``).
static __device__ __forceinline__ SanitizerPatchResult peer_access(
    void* userdata, uint64_t pc, void* ptr, uint32_t size, uint32_t flags, uint64_t where)
{
    if (Record* r = reserve(userdata, tracerace::PEER_ACCESS, pc)) {
        r->flags = static_cast<uint8_t>(flags);
        r->size = size;
        r->addr = where & 0xFFFFFFFFu;
        r->arg = where >> tracerace::kRankShift;
        r->addr2 = reinterpret_cast<uint64_t>(ptr);
    }
    return SANITIZER_PATCH_SUCCESS;
}

// In a cluster launch the API reports a block's shared accesses as shared::cluster
// addresses (on an H200, block rank 1's own buffer at 0x1000000 and up), so the
// address is taken apart as the remote callback's is: an access to the block's
// own window is an ACCESS at the offset, one to a peer's a PEER_ACCESS.
extern "C" __device__ __noinline__ SanitizerPatchResult tracerace_shared_access(
    void* userdata, uint64_t pc, void* ptr, uint32_t size, uint32_t flags, const void*)
{
    const uint64_t where = cluster_address(static_cast<uint32_t>(reinterpret_cast<uint64_t>(ptr)));
    const uint32_t rank = static_cast<uint32_t>(where >> tracerace::kRankShift);
    if (rank == own_rank())
        return access(userdata, pc, reinterpret_cast<void*>(where & 0xFFFFFFFFu), size, flags, 1);
    return peer_access(userdata, pc, ptr, size, flags, where);
}

extern "C" __device__ __noinline__ SanitizerPatchResult tracerace_local_access(
    void* userdata, uint64_t pc, void* ptr, uint32_t size, uint32_t flags, const void*)
{
    return access(userdata, pc, ptr, size, flags, 2);
}

extern "C" __device__ __noinline__ SanitizerPatchResult tracerace_barrier(
    void* userdata, uint64_t pc, uint32_t index, uint32_t count, uint32_t flags)
{
    if (Record* r = reserve(userdata, tracerace::BARRIER, pc)) {
        r->addr = index;
        r->arg = count;
        r->flags = static_cast<uint8_t>(flags);
    }
    return SANITIZER_PATCH_SUCCESS;
}

extern "C" __device__ __noinline__ SanitizerPatchResult tracerace_syncwarp(
    void* userdata, uint64_t pc, uint32_t mask)
{
    if (Record* r = reserve(userdata, tracerace::SYNCWARP, pc))
        r->arg = mask;
    return SANITIZER_PATCH_SUCCESS;
}

extern "C" __device__ __noinline__ SanitizerPatchResult tracerace_block_exit(
    void* userdata, uint64_t pc)
{
    reserve(userdata, tracerace::BLOCK_EXIT, pc);
    return SANITIZER_PATCH_SUCCESS;
}

extern "C" __device__ __noinline__ SanitizerPatchResult tracerace_memcpy_async(
    void* userdata, uint64_t pc, void* src, uint32_t dst, uint32_t size)
{
    if (Record* r = reserve(userdata, tracerace::CP_ASYNC, pc)) {
        r->addr = cluster_address(dst) & 0xFFFFFFFFu;  // always the issuer's own window
        r->addr2 = reinterpret_cast<uint64_t>(src);
        r->size = size;
    }
    return SANITIZER_PATCH_SUCCESS;
}

extern "C" __device__ __noinline__ SanitizerPatchResult tracerace_pipeline_commit(
    void* userdata, uint64_t pc)
{
    reserve(userdata, tracerace::CP_COMMIT, pc);
    return SANITIZER_PATCH_SUCCESS;
}

extern "C" __device__ __noinline__ SanitizerPatchResult tracerace_pipeline_wait(
    void* userdata, uint64_t pc, uint32_t groups)
{
    if (Record* r = reserve(userdata, tracerace::CP_WAIT, pc))
        r->arg = groups;
    return SANITIZER_PATCH_SUCCESS;
}

extern "C" __device__ __noinline__ SanitizerPatchResult tracerace_cuda_barrier(
    void* userdata, uint64_t pc, void* barrier, uint32_t kind, uint32_t data)
{
    if (Record* r = reserve(userdata, tracerace::MBARRIER, pc)) {
        const uint64_t where = cluster_address(static_cast<uint32_t>(reinterpret_cast<uint64_t>(barrier)));
        const uint32_t rank = static_cast<uint32_t>(where >> tracerace::kRankShift);
        r->aux = static_cast<uint8_t>(kind);
        r->addr = where & 0xFFFFFFFFu;
        r->arg = data;
        if (rank != own_rank()) {  // a peer's mbarrier (shared::cluster): the converter refuses it
            r->flags = tracerace::kPeerMbarrier;
            r->space = static_cast<uint8_t>(rank);
        }
    }
    return SANITIZER_PATCH_SUCCESS;
}

// Instructions tracerace cannot express: recorded so that the converter
// refuses the launch and names them. One function per callback signature;
// the instruction id is fixed by which one the host patched in (numbers, not
// the enum's names, so that older sanitizer headers compile the file too).
static __device__ __forceinline__ SanitizerPatchResult unfollowed(
    void* userdata, uint64_t pc, uint8_t instruction, uint64_t a, uint64_t b)
{
    if (Record* r = reserve(userdata, tracerace::UNFOLLOWED, pc)) {
        r->aux = instruction;
        r->addr = a;
        r->addr2 = b;
    }
    return SANITIZER_PATCH_SUCCESS;
}

// Distributed shared memory: a load, store or atomic on another block's (or
// the block's own) shared memory through a shared::cluster address.
extern "C" __device__ __noinline__ SanitizerPatchResult tracerace_remote_shared_access(
    void* userdata, uint64_t pc, void* ptr, uint32_t size, uint32_t flags, const void*)
{
    const uint64_t where = cluster_address(static_cast<uint32_t>(reinterpret_cast<uint64_t>(ptr)));
    return peer_access(userdata, pc, ptr, size, flags, where);
}

extern "C" __device__ __noinline__ SanitizerPatchResult tracerace_cluster_arrive(
    void* userdata, uint64_t pc)
{
    reserve(userdata, tracerace::CLUSTER_ARRIVE, pc);
    return SANITIZER_PATCH_SUCCESS;
}

extern "C" __device__ __noinline__ SanitizerPatchResult tracerace_cluster_wait(
    void* userdata, uint64_t pc)
{
    reserve(userdata, tracerace::CLUSTER_WAIT, pc);
    return SANITIZER_PATCH_SUCCESS;
}

// Bulk copies and reductions, async stores and reductions: one BULK record,
// aux the Sanitizer_InstructionId, addr the destination, addr2 the source
// (shared sides as cluster addresses), size the bytes, arg the mbarrier the
// bytes complete on (a cluster address), space and flags the multicast mask.
static __device__ __forceinline__ SanitizerPatchResult bulk(
    void* userdata, uint64_t pc, uint8_t instruction, uint64_t dst, uint64_t src, uint32_t size,
    uint64_t mbarrier, uint32_t mask)
{
    if (Record* r = reserve(userdata, tracerace::BULK, pc)) {
        r->aux = instruction;
        r->addr = dst;
        r->addr2 = src;
        r->size = size;
        r->arg = mbarrier;
        r->space = static_cast<uint8_t>(mask & 0xFF);
        r->flags = static_cast<uint8_t>(mask >> 8);
    }
    return SANITIZER_PATCH_SUCCESS;
}

extern "C" __device__ __noinline__ SanitizerPatchResult tracerace_async_store(
    void* userdata, uint64_t pc, uint32_t address, uint32_t mbar, void*, uint32_t size)
{
    return bulk(userdata, pc, 26 /* ASYNC_STORE */, cluster_address(address), 0, size,
                cluster_address(mbar), 0);
}

extern "C" __device__ __noinline__ SanitizerPatchResult tracerace_async_reduction(
    void* userdata, uint64_t pc, uint32_t address, uint32_t mbar, uint32_t size)
{
    return bulk(userdata, pc, 27 /* ASYNC_REDUCTION */, cluster_address(address), 0, size,
                cluster_address(mbar), 0);
}

// data: bits 0-15 the 16-byte blocks copied, bits 16-31 the multicast mask.
extern "C" __device__ __noinline__ SanitizerPatchResult tracerace_bulk_g2s(
    void* userdata, uint64_t pc, uint64_t src, uint32_t dst, uint32_t barrier, uint32_t data,
    uint32_t isMulticast)
{
    return bulk(userdata, pc, 30 /* BULK_COPY_GLOBAL_TO_SHARED */, cluster_address(dst), src,
                (data & 0xFFFFu) * 16u, cluster_address(barrier), isMulticast ? data >> 16 : 0);
}

extern "C" __device__ __noinline__ SanitizerPatchResult tracerace_bulk_s2g(
    void* userdata, uint64_t pc, uint64_t dst, uint32_t src, uint32_t numBlocks)
{
    return bulk(userdata, pc, 35 /* BULK_COPY_SHARED_TO_GLOBAL */, dst, cluster_address(src),
                numBlocks * 16u, 0, 0);
}

extern "C" __device__ __noinline__ SanitizerPatchResult tracerace_bulk_s2s(
    void* userdata, uint64_t pc, uint32_t src, uint32_t dst, uint32_t barrier, uint32_t numBlocks)
{
    return bulk(userdata, pc, 36 /* BULK_COPY_SHARED_TO_SHARED */, cluster_address(dst),
                cluster_address(src), numBlocks * 16u, cluster_address(barrier), 0);
}

extern "C" __device__ __noinline__ SanitizerPatchResult tracerace_bulk_red_s2g(
    void* userdata, uint64_t pc, uint64_t dst, uint32_t src, uint32_t numBlocks)
{
    return bulk(userdata, pc, 37 /* BULK_REDUCTION_SHARED_TO_GLOBAL */, dst,
                cluster_address(src), numBlocks * 16u, 0, 0);
}

extern "C" __device__ __noinline__ SanitizerPatchResult tracerace_bulk_red_s2s(
    void* userdata, uint64_t pc, uint32_t src, uint32_t dst, uint32_t barrier, uint32_t numBlocks)
{
    return bulk(userdata, pc, 38 /* BULK_REDUCTION_SHARED_TO_SHARED */, cluster_address(dst),
                cluster_address(src), numBlocks * 16u, cluster_address(barrier), 0);
}

extern "C" __device__ __noinline__ SanitizerPatchResult tracerace_matrix_access(
    void* userdata, uint64_t pc, uint32_t address, uint32_t, uint32_t, uint32_t, const void*)
{
    return unfollowed(userdata, pc, 19 /* MATRIX_MEMORY_ACCESS */, address, 0);
}

extern "C" __device__ __noinline__ SanitizerPatchResult tracerace_wgmma(
    void* userdata, uint64_t pc, uint32_t a, uint32_t, uint32_t b, uint32_t, uint32_t, uint32_t)
{
    return unfollowed(userdata, pc, 23 /* WARPGROUP_MMA_ASYNC */, a, b);
}

extern "C" __device__ __noinline__ SanitizerPatchResult tracerace_memset_shared(
    void* userdata, uint64_t pc, uint32_t dst, uint32_t)
{
    return unfollowed(userdata, pc, 32 /* MEMSET_SHARED */, dst, 0);
}

extern "C" __device__ __noinline__ SanitizerPatchResult tracerace_memcpy_async_barrier(
    void* userdata, uint64_t pc, uint32_t barrier)
{
    return unfollowed(userdata, pc, 34 /* MEMCPY_ASYNC_BARRIER */, barrier, 0);
}

extern "C" __device__ __noinline__ SanitizerPatchResult tracerace_tensor_core_barrier(
    void* userdata, uint64_t pc, uint32_t barrier, uint32_t, uint32_t)
{
    return unfollowed(userdata, pc, 31 /* TENSOR_CORE_BARRIER */, barrier, 0);
}
