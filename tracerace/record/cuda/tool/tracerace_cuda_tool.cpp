// Host side of tracerace's CUDA tool library, on NVIDIA's Compute Sanitizer API.
//
// `tracerace record --backend cuda` runs the program with this library as
// its CUDA injection library (CUDA_INJECTION64_PATH); it subscribes to the
// Sanitizer callbacks when loaded. For every module loaded it adds the device
// patches (tracerace_cuda_patches.cu, a fatbin named by
// TRACERACE_CUDA_PATCHES) at every instruction kind tracerace records and
// writes the module's cubin beside the stream (the converter maps PCs to
// source lines with it). For every launch it hands the patches a device
// buffer, waits for the launch to finish, and appends the launch and the
// buffer's records to the stream TRACERACE_CUDA_OUT.PID.trc (the format is
// documented in tracerace/record/cuda/stream.py). Host copies and memsets
// into device memory and the allocations are host records of the stream.
//
// Anything the tool cannot follow (a failed Sanitizer call, a CUDA graph
// launch) is written as an ERROR string record, and the converter refuses
// the recording with that message: a partial recording is never presented
// as complete.
#include <sanitizer.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <unistd.h>

#include "tracerace_cuda.h"

namespace tracerace {

namespace {

struct Patch {
    uint32_t instruction;  // Sanitizer_InstructionId
    const char* function;  // in tracerace_cuda_patches.cu
    bool required;         // the recording is refused when it cannot be patched in
};

// Every instruction kind the tool patches, and the device function it calls.
const Patch kPatches[] = {
    {SANITIZER_INSTRUCTION_GLOBAL_MEMORY_ACCESS, "tracerace_global_access", true},
    {SANITIZER_INSTRUCTION_SHARED_MEMORY_ACCESS, "tracerace_shared_access", true},
    {SANITIZER_INSTRUCTION_LOCAL_MEMORY_ACCESS, "tracerace_local_access", true},
    {SANITIZER_INSTRUCTION_BARRIER, "tracerace_barrier", true},
    {SANITIZER_INSTRUCTION_SYNCWARP, "tracerace_syncwarp", true},
    {SANITIZER_INSTRUCTION_BLOCK_EXIT, "tracerace_block_exit", true},
    {SANITIZER_INSTRUCTION_MEMCPY_ASYNC, "tracerace_memcpy_async", true},
    {SANITIZER_INSTRUCTION_PIPELINE_COMMIT, "tracerace_pipeline_commit", true},
    {SANITIZER_INSTRUCTION_PIPELINE_WAIT, "tracerace_pipeline_wait", true},
    {SANITIZER_INSTRUCTION_CUDA_BARRIER, "tracerace_cuda_barrier", true},
    // sm_90 and later (numbers, so older headers compile the file too; a
    // driver that does not know one drives no GPU that runs it either).
    {17, "tracerace_remote_shared_access", false},  // REMOTE_SHARED_MEMORY_ACCESS
    {21, "tracerace_cluster_arrive", false},        // CLUSTER_BARRIER_ARRIVE
    {22, "tracerace_cluster_wait", false},          // CLUSTER_BARRIER_WAIT
    {26, "tracerace_async_store", false},           // ASYNC_STORE
    {27, "tracerace_async_reduction", false},       // ASYNC_REDUCTION
    {30, "tracerace_bulk_g2s", false},              // BULK_COPY_GLOBAL_TO_SHARED
    {35, "tracerace_bulk_s2g", false},              // BULK_COPY_SHARED_TO_GLOBAL
    {36, "tracerace_bulk_s2s", false},              // BULK_COPY_SHARED_TO_SHARED
    {37, "tracerace_bulk_red_s2g", false},          // BULK_REDUCTION_SHARED_TO_GLOBAL
    {38, "tracerace_bulk_red_s2s", false},          // BULK_REDUCTION_SHARED_TO_SHARED
    // Recorded only to refuse them.
    {19, "tracerace_matrix_access", false},
    {23, "tracerace_wgmma", false},
    {31, "tracerace_tensor_core_barrier", false},
    {32, "tracerace_memset_shared", false},
    {34, "tracerace_memcpy_async_barrier", false},
};

constexpr size_t kDrainRecords = 1 << 20;  // records copied to the host at a time

struct ContextState {
    bool patchesLoaded = false;
    DeviceBuffer* device = nullptr;  // header on the device
    Record* records = nullptr;       // the buffer on the device
};

struct Tool {
    // Recursive: a Sanitizer call made inside a callback may call back.
    std::recursive_mutex lock;
    FILE* out = nullptr;
    std::string prefix;
    std::string patches;
    unsigned long long capacity = 0;
    std::map<std::string, uint32_t> strings;
    std::map<CUmodule, uint32_t> modules;
    std::map<CUcontext, ContextState> contexts;
    uint32_t launches = 0;
    // Grid and block dimensions by gridId: the API gives them at LAUNCH_BEGIN
    // only, the launch record is written at LAUNCH_END.
    std::map<uint64_t, Sanitizer_LaunchData> begun;
    std::vector<Record> staging;
};

Tool& tool()
{
    static Tool instance;
    return instance;
}

void write(Tool& t, const Record& r) { fwrite(&r, sizeof r, 1, t.out); }

Record host(uint8_t kind)
{
    Record r;
    std::memset(&r, 0, sizeof r);
    r.kind = kind;
    return r;
}

uint32_t stringId(Tool& t, const std::string& text)
{
    auto found = t.strings.find(text);
    if (found != t.strings.end())
        return found->second;
    const uint32_t id = static_cast<uint32_t>(t.strings.size());
    t.strings[text] = id;
    Record r = host(STRING);
    r.block = id;
    r.size = static_cast<uint32_t>(text.size());
    write(t, r);
    std::vector<char> payload((text.size() + sizeof(Record) - 1) / sizeof(Record) * sizeof(Record));
    std::memcpy(payload.data(), text.data(), text.size());
    fwrite(payload.data(), 1, payload.size(), t.out);
    return id;
}

void error(Tool& t, const std::string& message)
{
    Record r = host(ERROR);
    r.size = stringId(t, message);
    write(t, r);
    fflush(t.out);
    fprintf(stderr, "tracerace cuda tool: %s\n", message.c_str());
}

std::string failed(const char* what, SanitizerResult result)
{
    const char* text = nullptr;
    sanitizerGetResultString(result, &text);
    return std::string(what) + " failed: " + (text ? text : "unknown Sanitizer error");
}

void moduleLoaded(Tool& t, const Sanitizer_ResourceModuleData* data)
{
    ContextState& ctx = t.contexts[data->context];
    if (!ctx.patchesLoaded) {
        SanitizerResult result = sanitizerAddPatchesFromFile(t.patches.c_str(), data->context);
        if (result != SANITIZER_SUCCESS)
            return error(t, failed(("loading the device patches " + t.patches).c_str(), result));
        ctx.patchesLoaded = true;
    }
    for (const Patch& patch : kPatches) {
        SanitizerResult result = sanitizerPatchInstructions(
            static_cast<Sanitizer_InstructionId>(patch.instruction), data->module, patch.function);
        if (result != SANITIZER_SUCCESS && patch.required)
            return error(t, failed((std::string("patching in ") + patch.function).c_str(), result));
    }
    SanitizerResult result = sanitizerPatchModule(data->module);
    if (result != SANITIZER_SUCCESS)
        return error(t, failed("sanitizerPatchModule", result));

    const uint32_t id = static_cast<uint32_t>(t.modules.size());
    t.modules[data->module] = id;
    std::string name = t.prefix + "." + std::to_string(getpid()) + ".module-" +
                       std::to_string(id) + ".cubin";
    std::string written;
    if (data->pCubin && data->cubinSize) {
        if (FILE* f = fopen(name.c_str(), "wb")) {
            if (fwrite(data->pCubin, 1, data->cubinSize, f) == data->cubinSize)
                written = name.substr(name.find_last_of('/') + 1);
            fclose(f);
        }
    }
    Record r = host(MODULE);
    r.thread = id;
    r.size = stringId(t, written);
    write(t, r);
}

void memoryAllocated(Tool& t, const Sanitizer_ResourceMemoryData* data)
{
    Record r = host(ALLOC);
    r.addr = data->address;
    r.size = static_cast<uint32_t>(data->size > 0xFFFFFFFFull ? 0xFFFFFFFFull : data->size);
    // Sizes past 4 GiB: one ALLOC per 4 GiB piece.
    for (uint64_t done = 0; done < data->size; done += 0xFFFFFFFFull) {
        r.addr = data->address + done;
        const uint64_t left = data->size - done;
        r.size = static_cast<uint32_t>(left > 0xFFFFFFFFull ? 0xFFFFFFFFull : left);
        write(t, r);
        // Memory other than plain device memory (a module's globals, managed,
        // host-mapped or pinned memory, runtime buffers) is defined by the
        // module or by the CPU, which the tool does not see write it.
        if (data->flags != SANITIZER_MEMORY_FLAG_NONE) {
            Record init = r;
            init.kind = HOST_INIT;
            write(t, init);
        }
    }
}

void defined(Tool& t, uint64_t address, uint64_t bytes)
{
    for (uint64_t done = 0; done < bytes; done += 0xFFFFFFFFull) {
        Record r = host(HOST_INIT);
        r.addr = address + done;
        const uint64_t left = bytes - done;
        r.size = static_cast<uint32_t>(left > 0xFFFFFFFFull ? 0xFFFFFFFFull : left);
        write(t, r);
    }
}

void memcpyStarting(Tool& t, const Sanitizer_MemcpyData* data)
{
    if (data->direction == SANITIZER_MEMCPY_DIRECTION_DEVICE_TO_HOST)
        return;
    uint64_t bytes = data->size;
    if (data->height > 1 || data->depth > 1) {
        const uint64_t rows = (data->height ? data->height : 1) * (data->depth ? data->depth : 1);
        bytes = data->dstPitch * (rows - 1) + data->width;
    }
    defined(t, data->dstAddress, bytes);
}

void memsetStarting(Tool& t, const Sanitizer_MemsetData* data)
{
    const uint64_t row = data->width * (data->elementSize ? data->elementSize : 1);
    const uint64_t rows = data->height ? data->height : 1;
    defined(t, data->address, data->pitch * (rows - 1) + row);
}

void launchBegin(Tool& t, const Sanitizer_LaunchData* data)
{
    ContextState& ctx = t.contexts[data->context];
    if (!ctx.device) {
        if (sanitizerAlloc(data->context, reinterpret_cast<void**>(&ctx.records),
                           t.capacity * sizeof(Record)) != SANITIZER_SUCCESS ||
            sanitizerAlloc(data->context, reinterpret_cast<void**>(&ctx.device),
                           sizeof(DeviceBuffer)) != SANITIZER_SUCCESS)
            return error(t, "cannot allocate the device record buffer (" +
                                std::to_string(t.capacity * sizeof(Record) >> 20) +
                                " MiB); set TRACERACE_CUDA_BUFFER_MB lower");
    }
    t.begun[data->gridId] = *data;
    DeviceBuffer header{0, t.capacity, ctx.records};
    sanitizerMemcpyHostToDeviceAsync(ctx.device, &header, sizeof header, data->hStream);
    SanitizerResult result =
        sanitizerSetLaunchCallbackData(data->hLaunch, data->function, data->hStream, ctx.device);
    if (result != SANITIZER_SUCCESS)
        result = sanitizerSetCallbackData(data->function, ctx.device);
    if (result != SANITIZER_SUCCESS)
        error(t, failed("handing the record buffer to the launch", result));
}

void launchEnd(Tool& t, const Sanitizer_LaunchData* data)
{
    ContextState& ctx = t.contexts[data->context];
    if (!ctx.device)
        return;
    // The launch must finish before its records are read: launches of the
    // recorded program run one after another.
    SanitizerResult result = sanitizerStreamSynchronize(data->hStream);
    if (result != SANITIZER_SUCCESS)
        return error(t, failed("waiting for the launch", result));
    DeviceBuffer header{};
    sanitizerMemcpyDeviceToHost(&header, ctx.device, sizeof header, data->hStream);

    uint64_t pc = 0, size = 0;
    sanitizerGetFunctionPcAndSize(data->module, data->functionName, &pc, &size);
    auto module = t.modules.find(data->module);
    Record r = host(LAUNCH);
    r.block = t.launches;
    r.thread = module == t.modules.end() ? 0xFFFFFFFFu : module->second;
    r.size = stringId(t, data->functionName ? data->functionName : "?");
    r.pc = pc;
    auto begun = t.begun.find(data->gridId);
    if (begun == t.begun.end())
        return error(t, std::string("the launch of ") + (data->functionName ? data->functionName : "?") +
                            " ended without beginning");
    const Sanitizer_LaunchData& dims = begun->second;
    r.addr = dims.gridDim_x | static_cast<uint64_t>(dims.gridDim_y) << 32;
    r.addr2 = dims.gridDim_z | static_cast<uint64_t>(dims.blockDim_x) << 32;
    r.arg = dims.blockDim_y | static_cast<uint64_t>(dims.blockDim_z) << 32;
    // A cluster has at most 16 blocks, so each dimension fits a byte; 0: the
    // driver reported none.
    r.space = static_cast<uint8_t>(dims.clusterDim_x > 0xFF ? 0 : dims.clusterDim_x);
    r.flags = static_cast<uint8_t>(dims.clusterDim_y > 0xFF ? 0 : dims.clusterDim_y);
    r.aux = static_cast<uint8_t>(dims.clusterDim_z > 0xFF ? 0 : dims.clusterDim_z);
    t.begun.erase(begun);
    write(t, r);

    const unsigned long long stored = header.next < t.capacity ? header.next : t.capacity;
    t.staging.resize(kDrainRecords);
    for (unsigned long long done = 0; done < stored; done += kDrainRecords) {
        const size_t n = static_cast<size_t>(
            stored - done < kDrainRecords ? stored - done : kDrainRecords);
        sanitizerMemcpyDeviceToHost(t.staging.data(), ctx.records + done, n * sizeof(Record),
                                    data->hStream);
        fwrite(t.staging.data(), sizeof(Record), n, t.out);
    }
    Record end = host(LAUNCH_END);
    end.block = t.launches++;
    end.arg = header.next;
    end.addr = t.capacity;
    write(t, end);
    fflush(t.out);
}

void callback(void*, Sanitizer_CallbackDomain domain, Sanitizer_CallbackId cbid, const void* data)
{
    Tool& t = tool();
    std::lock_guard<std::recursive_mutex> guard(t.lock);
    switch (domain) {
    case SANITIZER_CB_DOMAIN_RESOURCE:
        if (cbid == SANITIZER_CBID_RESOURCE_MODULE_LOADED)
            moduleLoaded(t, static_cast<const Sanitizer_ResourceModuleData*>(data));
        else if (cbid == SANITIZER_CBID_RESOURCE_DEVICE_MEMORY_ALLOC ||
                 cbid == SANITIZER_CBID_RESOURCE_HOST_MEMORY_ALLOC ||
                 cbid == SANITIZER_CBID_RESOURCE_MEMORY_ALLOC_ASYNC)
            memoryAllocated(t, static_cast<const Sanitizer_ResourceMemoryData*>(data));
        break;
    case SANITIZER_CB_DOMAIN_LAUNCH:
        if (cbid == SANITIZER_CBID_LAUNCH_BEGIN)
            launchBegin(t, static_cast<const Sanitizer_LaunchData*>(data));
        else if (cbid == SANITIZER_CBID_LAUNCH_END)
            launchEnd(t, static_cast<const Sanitizer_LaunchData*>(data));
        break;
    case SANITIZER_CB_DOMAIN_MEMCPY:
        if (cbid == SANITIZER_CBID_MEMCPY_STARTING)
            memcpyStarting(t, static_cast<const Sanitizer_MemcpyData*>(data));
        break;
    case SANITIZER_CB_DOMAIN_MEMSET:
        if (cbid == SANITIZER_CBID_MEMSET_STARTING)
            memsetStarting(t, static_cast<const Sanitizer_MemsetData*>(data));
        break;
    case SANITIZER_CB_DOMAIN_GRAPHS:
        if (cbid == SANITIZER_CBID_GRAPHS_LAUNCH_BEGIN)
            error(t, "the program launched a CUDA graph, whose kernels the tool does not "
                     "record (run the program without CUDA graphs)");
        break;
    case SANITIZER_CB_DOMAIN_BATCH_MEMOP:
        error(t, "the program used a batch memory operation (cuStreamBatchMemOp), which "
                 "orders memory in a way the tool does not record");
        break;
    default:
        break;
    }
}

}  // namespace

}  // namespace tracerace

extern "C" int InitializeInjection()
{
    using namespace tracerace;
    static bool done = false;
    if (done)
        return 1;
    done = true;
    Tool& t = tool();
    const char* prefix = std::getenv("TRACERACE_CUDA_OUT");
    const char* patches = std::getenv("TRACERACE_CUDA_PATCHES");
    if (!prefix || !patches) {
        fprintf(stderr, "tracerace cuda tool: TRACERACE_CUDA_OUT and TRACERACE_CUDA_PATCHES "
                        "must be set (run it through tracerace record --backend cuda)\n");
        return 0;
    }
    t.prefix = prefix;
    t.patches = patches;
    const char* mb = std::getenv("TRACERACE_CUDA_BUFFER_MB");
    const unsigned long long bytes = (mb ? std::strtoull(mb, nullptr, 10) : 256ULL) << 20;
    t.capacity = bytes / sizeof(Record) ? bytes / sizeof(Record) : 1;
    const std::string path = t.prefix + "." + std::to_string(getpid()) + ".trc";
    t.out = fopen(path.c_str(), "wb");
    if (!t.out) {
        fprintf(stderr, "tracerace cuda tool: cannot write %s\n", path.c_str());
        return 0;
    }
    const char magic[8] = {'T', 'R', 'C', 'U', 'D', 'A', 0, 0};
    const uint16_t version = kStreamVersion, recordSize = sizeof(Record);
    const uint32_t reserved = 0;
    fwrite(magic, 1, 8, t.out);
    fwrite(&version, 2, 1, t.out);
    fwrite(&recordSize, 2, 1, t.out);
    fwrite(&reserved, 4, 1, t.out);
    fflush(t.out);

    Sanitizer_SubscriberHandle handle;
    SanitizerResult result = sanitizerSubscribe(&handle, callback, nullptr);
    if (result == SANITIZER_SUCCESS)
        result = sanitizerEnableAllDomains(1, handle);
    if (result != SANITIZER_SUCCESS) {
        std::lock_guard<std::recursive_mutex> guard(t.lock);
        error(t, failed("subscribing to the Compute Sanitizer callbacks", result));
        return 0;
    }
    return 1;
}

// Loaded with LD_PRELOAD rather than as the injection library, the library
// subscribes when it is loaded.
__attribute__((constructor)) static void tracerace_cuda_tool_loaded()
{
    if (std::getenv("TRACERACE_CUDA_PRELOAD"))
        InitializeInjection();
}
