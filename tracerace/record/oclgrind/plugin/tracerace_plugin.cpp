// tracerace_plugin.cpp: an Oclgrind plugin that records what tracerace needs.
//
// Oclgrind interprets OpenCL kernels one work-group at a time; inside a group it
// runs each work-item until it reaches a barrier or finishes. This plugin writes
// every load, store and atomic (global, constant, local and private memory), each
// work-item's barrier arrival (with its fence flags), each barrier release, memory
// fences, async_work_group_copy issues and the events each wait_group_events waits
// for, the private copies of by-value arguments, host writes to device memory,
// kernel launches and fatal errors, in exactly that execution order.
//
// tracerace builds this file on first use (see tracerace/record/oclgrind/build.py)
// and turns its output into a v1 trace (tracerace/record/oclgrind/convert.py).
// Oclgrind loads it through `--plugins`; the output prefix comes from the
// environment variable TRACERACE_OCLGRIND_OUT. Two files per process:
//
//   PREFIX.PID.events  fixed-size binary records (struct Record, little-endian)
//   PREFIX.PID.meta    tab-separated text: sites, kernel launches, buffers, async
//                      copies, waited events, fatal errors
//
// The record layout and the kind codes are mirrored in tracerace/record/oclgrind/convert.py.

#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <unistd.h>
#include <unordered_map>

#include "llvm/IR/DebugInfoMetadata.h"
#include "llvm/IR/DerivedTypes.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/Instructions.h"

#include <oclgrind/Context.h>
#include <oclgrind/Kernel.h>
#include <oclgrind/KernelInvocation.h>
#include <oclgrind/Memory.h>
#include <oclgrind/Plugin.h>
#include <oclgrind/WorkGroup.h>
#include <oclgrind/WorkItem.h>

using namespace oclgrind;

namespace
{

// What a record says happened. Mirrored in tracerace/record/oclgrind/convert.py (Kind).
enum Kind : uint8_t
{
  LOAD = 0,           // a work-item read `size` bytes at `address`
  STORE = 1,          // a work-item wrote them
  ATOMIC = 2,         // an atomic read-modify-write; detail = Oclgrind's AtomicOp
  HOST_WRITE = 3,     // the host wrote device memory (buffer init, write, map)
  ARG_INIT = 4,       // a work-item's private copy of a by-value argument, filled
                      // by Oclgrind without a store
  ARRIVE = 10,        // a work-item reached a barrier; count = work-items in its group,
                      // detail = fence flags, variant = BarrierKind
  RELEASE = 11,       // the group's barrier released; detail = fence flags
  FENCE = 20,         // mem_fence and friends; detail = flags, variant = FenceKind
  GROUP_LOAD = 30,    // the work-group itself read memory (async copy, at a wait)
  GROUP_STORE = 31,   // ... and wrote it
  COPY_ISSUE = 32,    // a work-item called async_work_group_copy; count = the
                      // "copy" line of the meta file that describes the call
  WAIT_EVENTS = 33,   // a work-item called wait_group_events (its ARRIVE follows);
                      // count = the "wait" line that lists the events
  KERNEL_BEGIN = 40,  // count = launch index
  KERNEL_END = 41,
};

// Which fence builtin ran (Record::variant of a FENCE).
enum FenceKind : uint8_t
{
  FENCE_FULL = 0,   // mem_fence, atomic_work_item_fence
  FENCE_READ = 1,   // read_mem_fence
  FENCE_WRITE = 2,  // write_mem_fence
};

// Which barrier a work-item reached (Record::variant of an ARRIVE).
enum BarrierKind : uint8_t
{
  BARRIER_FLAGS = 0,     // barrier() / work_group_barrier(): detail = its flags argument
  BARRIER_WAIT = 1,      // wait_group_events: Oclgrind fences local and global memory
  BARRIER_UNKNOWN = 2,   // another call that waits at the barrier: flags unknown
};

// OpenCL's cl_mem_fence_flags.
const uint32_t LOCAL_MEM_FENCE = 1, GLOBAL_MEM_FENCE = 2;

const uint32_t NO_SITE = 0xffffffffu;
const uint32_t NO_ITEM = 0xffffffffu;

#pragma pack(push, 1)
struct Record
{
  uint8_t kind;
  uint8_t space;    // Oclgrind address space: 0 private, 1 global, 2 constant, 3 local
  uint8_t detail;
  uint8_t variant;
  uint32_t size;
  uint32_t group;   // linear work-group index within the launch
  uint32_t item;    // linear local id within the work-group (NO_ITEM: the group)
  uint64_t address;
  uint32_t site;    // index into the site lines of the meta file, or NO_SITE
  uint32_t count;
};
#pragma pack(pop)
static_assert(sizeof(Record) == 32, "the converter reads 32-byte records");

// Linear index of a 3-D id in a 3-D extent (x fastest, as OpenCL linearises).
uint32_t linear(const Size3& id, const Size3& extent)
{
  return (uint32_t)(id.x + extent.x * (id.y + extent.y * id.z));
}

uint32_t volume(const Size3& extent)
{
  return (uint32_t)(extent.x * extent.y * extent.z);
}

// The mangled parameter list of an OpenCL builtin: "_Z9mem_fencej" -> "j".
std::string builtinOverload(llvm::StringRef mangled)
{
  if (!mangled.startswith("_Z"))
    return "";
  size_t pos = 2, length = 0;
  while (pos < mangled.size() && isdigit((unsigned char)mangled[pos]))
    length = length * 10 + (mangled[pos++] - '0');
  return mangled.substr(pos + length).str();
}

// Bytes of one element of an async copy, from the overload of its builtin, as
// Oclgrind computes them ("PU3AS3fPU3AS1Kfm9ocl_event": float; "PU3AS3Dv4_f...":
// float4; a 3-vector takes the room of four). 0 when the type is not known.
uint32_t copyElementSize(const std::string& overload)
{
  if (overload.size() < 8)
    return 0;
  uint32_t lanes = 1;
  char type = overload[6];
  if (type == 'D')
  {
    size_t end = overload.find('_', 8);
    if (end == std::string::npos || end + 1 >= overload.size())
      return 0;
    lanes = (uint32_t)std::stoul(overload.substr(8, end - 8));
    lanes = lanes == 3 ? 4 : lanes;
    type = overload[end + 1];
  }
  switch (type)
  {
  case 'c':
  case 'h':
    return lanes;
  case 's':
  case 't':
    return 2 * lanes;
  case 'f':
  case 'i':
  case 'j':
    return 4 * lanes;
  case 'd':
  case 'l':
  case 'm':
    return 8 * lanes;
  default:
    return 0;
  }
}

// One line of the meta file: no tabs or line breaks inside a field.
std::string oneLine(const std::string& text)
{
  std::string out;
  for (char c : text)
    out += c == '\n' ? std::string(" | ") : c == '\t' ? std::string(" ") : std::string(1, c);
  return out;
}

// "_Z9mem_fencej" -> "mem_fence": the plain name of a mangled OpenCL builtin.
std::string builtinName(llvm::StringRef mangled)
{
  if (!mangled.startswith("_Z"))
    return mangled.str();
  size_t pos = 2, length = 0;
  while (pos < mangled.size() && isdigit((unsigned char)mangled[pos]))
    length = length * 10 + (mangled[pos++] - '0');
  return mangled.substr(pos, length).str();
}

// Bytes of one element of an OpenCL C type named like "float4*" or "uint".
uint32_t itemSize(std::string type)
{
  while (!type.empty() && (type.back() == '*' || type.back() == ' '))
    type.pop_back();
  size_t digits = type.find_first_of("0123456789");
  uint32_t lanes = digits == std::string::npos ? 1 : std::stoi(type.substr(digits));
  std::string base = type.substr(0, digits);
  static const std::unordered_map<std::string, uint32_t> sizes = {
    {"char", 1},  {"uchar", 1}, {"bool", 1},   {"short", 2}, {"ushort", 2},
    {"half", 2},  {"int", 4},   {"uint", 4},   {"float", 4}, {"long", 8},
    {"ulong", 8}, {"double", 8}, {"size_t", 8}};
  auto found = sizes.find(base);
  return found == sizes.end() ? 1 : found->second * (lanes == 3 ? 4 : lanes);
}

// The process-wide output. Every Oclgrind context (one per OpenCL context) gets
// its own plugin object; they share this writer, its site table and the launch
// counter, so launches stay numbered in the order they ran.
class Output
{
public:
  static Output& get()
  {
    static Output output;
    return output;
  }

  bool ok() const { return m_events && m_meta; }

  void put(const Record& record)
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    if (m_events)
      fwrite(&record, sizeof record, 1, m_events);
  }

  // After each kernel: a host program that ends without running static
  // destructors (os._exit, a crash later on) keeps the kernels it finished.
  void flush()
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    if (m_events)
      fflush(m_events);
    if (m_meta)
      fflush(m_meta);
  }

  void meta(const std::string& line)
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    writeMeta(line);
  }

  // The site index of "file:line", registered the first time it is seen.
  uint32_t site(const std::string& text)
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    auto found = m_sites.find(text);
    if (found != m_sites.end())
      return found->second;
    uint32_t index = (uint32_t)m_sites.size();
    m_sites.emplace(text, index);
    writeMeta("site\t" + std::to_string(index) + "\t" + text);
    return index;
  }

  uint32_t nextLaunch()
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    return m_launches++;
  }

  // Numbers of the "copy" and "wait" lines of the meta file.
  uint32_t nextCopy()
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    return m_copies++;
  }

  uint32_t nextWait()
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    return m_waits++;
  }

private:
  Output()
  {
    const char* prefix = getenv("TRACERACE_OCLGRIND_OUT");
    if (!prefix || !*prefix)
    {
      fprintf(stderr, "tracerace plugin: TRACERACE_OCLGRIND_OUT is not set; "
                      "nothing is recorded\n");
      return;
    }
    std::string base = std::string(prefix) + "." + std::to_string(getpid());
    m_events = fopen((base + ".events").c_str(), "wb");
    m_meta = fopen((base + ".meta").c_str(), "w");
    if (!ok())
      fprintf(stderr, "tracerace plugin: cannot write %s.*\n", base.c_str());
    else
      setvbuf(m_events, nullptr, _IOFBF, 1 << 20);
  }

  void writeMeta(const std::string& line)
  {
    if (m_meta)
      fprintf(m_meta, "%s\n", line.c_str());
  }

  ~Output()
  {
    if (m_events)
      fclose(m_events);
    if (m_meta)
      fclose(m_meta);
  }

  FILE* m_events = nullptr;
  FILE* m_meta = nullptr;
  std::mutex m_mutex;
  std::unordered_map<std::string, uint32_t> m_sites;
  uint32_t m_launches = 0;
  uint32_t m_copies = 0;
  uint32_t m_waits = 0;
};

class Recorder : public Plugin
{
public:
  explicit Recorder(const Context* context) : Plugin(context) {}

  // One worker thread: records then come in Oclgrind's execution order.
  bool isThreadSafe() const override { return false; }

  void kernelBegin(const KernelInvocation* invocation) override;
  void kernelEnd(const KernelInvocation* invocation) override;
  void workGroupBegin(const WorkGroup* group) override;
  void workGroupBarrier(const WorkGroup* group, uint32_t flags) override;
  void workItemBegin(const WorkItem* item) override;
  void log(MessageType type, const char* message) override;
  void instructionExecuted(const WorkItem* item, const llvm::Instruction* instruction,
                           const TypedValue& result) override;

  void memoryLoad(const Memory* memory, const WorkItem* item, size_t address,
                  size_t size) override
  {
    access(LOAD, memory, item, address, size);
  }
  void memoryStore(const Memory* memory, const WorkItem* item, size_t address, size_t size,
                   const uint8_t*) override
  {
    access(STORE, memory, item, address, size);
  }
  void memoryAtomicLoad(const Memory* memory, const WorkItem* item, AtomicOp op,
                        size_t address, size_t size) override;
  void memoryAtomicStore(const Memory* memory, const WorkItem* item, AtomicOp op,
                         size_t address, size_t size) override;
  void memoryLoad(const Memory* memory, const WorkGroup* group, size_t address,
                  size_t size) override
  {
    groupAccess(GROUP_LOAD, memory, group, address, size);
  }
  void memoryStore(const Memory* memory, const WorkGroup* group, size_t address, size_t size,
                   const uint8_t*) override
  {
    groupAccess(GROUP_STORE, memory, group, address, size);
  }

  void hostMemoryStore(const Memory* memory, size_t address, size_t size,
                       const uint8_t*) override
  {
    hostWrite(memory, address, size);
  }
  void memoryAllocated(const Memory* memory, size_t address, size_t size, cl_mem_flags,
                       const uint8_t* initData) override
  {
    if (initData)
      hostWrite(memory, address, size);
  }
  void memoryMap(const Memory* memory, size_t address, size_t offset, size_t size,
                 cl_map_flags flags) override
  {
    // A map for writing hands the bytes to the host: count them as written.
    if (flags & (CL_MAP_WRITE | CL_MAP_WRITE_INVALIDATE_REGION))
      hostWrite(memory, address + offset, size);
  }

private:
  const KernelInvocation* m_invocation = nullptr;
  bool m_localsDeclared = false;
  uint32_t m_launch = 0;
  // Site per instruction, cleared at each launch (a freed program's
  // instructions may be reused at the same addresses by the next one).
  std::unordered_map<const llvm::Instruction*, uint32_t> m_siteCache;
  // Fence kind per call instruction; -1 when the call is no fence.
  std::unordered_map<const llvm::Instruction*, int> m_fenceCache;
  // The atomic load whose matching store is still to come (one record per RMW).
  const WorkItem* m_atomicItem = nullptr;
  size_t m_atomicAddress = 0;

  Record base(Kind kind, const WorkItem* item) const;
  uint32_t groupIndex(const WorkGroup* group) const;
  uint32_t site(const llvm::Instruction* instruction);
  int fenceKind(const llvm::Instruction* instruction);
  void arrive(const WorkItem* item, const llvm::CallInst* call);
  void asyncCopy(const WorkItem* item, const llvm::CallInst* call, const std::string& name,
                 const TypedValue& result);
  uint32_t waitEvents(const WorkItem* item, const llvm::CallInst* call);
  void access(Kind kind, const Memory* memory, const WorkItem* item, size_t address,
              size_t size, uint8_t detail = 0);
  void groupAccess(Kind kind, const Memory* memory, const WorkGroup* group, size_t address,
                   size_t size);
  void hostWrite(const Memory* memory, size_t address, size_t size);
  void declareArguments(const Kernel* kernel);
  void declareLocals(const WorkGroup* group);
  void declare(const std::string& name, const char* space, size_t address, size_t bytes,
               uint32_t itemsize);
};

Record Recorder::base(Kind kind, const WorkItem* item) const
{
  Record record = {};
  record.kind = kind;
  record.site = NO_SITE;
  record.item = NO_ITEM;
  if (item)
  {
    const WorkGroup* group = item->getWorkGroup();
    record.group = groupIndex(group);
    record.item = linear(item->getLocalID(), group->getGroupSize());
  }
  return record;
}

uint32_t Recorder::groupIndex(const WorkGroup* group) const
{
  return linear(group->getGroupID(), m_invocation->getNumGroups());
}

uint32_t Recorder::site(const llvm::Instruction* instruction)
{
  if (!instruction)
    return NO_SITE;
  auto found = m_siteCache.find(instruction);
  if (found != m_siteCache.end())
    return found->second;
  uint32_t index = NO_SITE;
  const llvm::DebugLoc& location = instruction->getDebugLoc();
  // Line 0 marks code the compiler made up (a merged call, say): no site.
  if (location && location.getLine() != 0)
  {
    std::string text = location->getFilename().str() + ":" + std::to_string(location.getLine());
    index = Output::get().site(text);
  }
  m_siteCache.emplace(instruction, index);
  return index;
}

int Recorder::fenceKind(const llvm::Instruction* instruction)
{
  auto found = m_fenceCache.find(instruction);
  if (found != m_fenceCache.end())
    return found->second;
  int kind = -1;
  auto call = llvm::dyn_cast<llvm::CallInst>(instruction);
  const llvm::Function* callee = call ? call->getCalledFunction() : nullptr;
  if (callee)
  {
    std::string name = builtinName(callee->getName());
    if (name == "mem_fence" || name == "atomic_work_item_fence")
      kind = FENCE_FULL;
    else if (name == "read_mem_fence")
      kind = FENCE_READ;
    else if (name == "write_mem_fence")
      kind = FENCE_WRITE;
  }
  m_fenceCache.emplace(instruction, kind);
  return kind;
}

void Recorder::access(Kind kind, const Memory* memory, const WorkItem* item, size_t address,
                      size_t size, uint8_t detail)
{
  if (!m_invocation || !item)
    return;
  Record record = base(kind, item);
  record.space = (uint8_t)memory->getAddressSpace();
  record.detail = detail;
  record.size = (uint32_t)size;
  record.address = address;
  record.site = site(item->getCurrentInstruction());
  Output::get().put(record);
}

void Recorder::groupAccess(Kind kind, const Memory* memory, const WorkGroup* group,
                           size_t address, size_t size)
{
  if (!m_invocation)
    return;
  Record record = base(kind, nullptr);
  record.space = (uint8_t)memory->getAddressSpace();
  record.size = (uint32_t)size;
  record.group = groupIndex(group);
  record.address = address;
  Output::get().put(record);
}

void Recorder::hostWrite(const Memory* memory, size_t address, size_t size)
{
  if (memory->getAddressSpace() != AddrSpaceGlobal)
    return;
  Record record = base(HOST_WRITE, nullptr);
  record.space = AddrSpaceGlobal;
  record.size = (uint32_t)size;
  record.address = address;
  Output::get().put(record);
}

void Recorder::memoryAtomicLoad(const Memory* memory, const WorkItem* item, AtomicOp op,
                                size_t address, size_t size)
{
  access(ATOMIC, memory, item, address, size, (uint8_t)op);
  m_atomicItem = item;
  m_atomicAddress = address;
}

void Recorder::memoryAtomicStore(const Memory* memory, const WorkItem* item, AtomicOp op,
                                 size_t address, size_t size)
{
  // Oclgrind reports an RMW as a load then a store: the load made the record.
  if (item == m_atomicItem && address == m_atomicAddress)
  {
    m_atomicItem = nullptr;
    return;
  }
  access(ATOMIC, memory, item, address, size, (uint8_t)op);
}

void Recorder::instructionExecuted(const WorkItem* item, const llvm::Instruction* instruction,
                                   const TypedValue& result)
{
  if (!m_invocation || !llvm::isa<llvm::CallInst>(instruction))
    return;
  auto call = llvm::cast<llvm::CallInst>(instruction);
  if (item->getState() == WorkItem::BARRIER)
  {
    // barrier(), work_group_barrier() and wait_group_events() leave the
    // work-item waiting at the group's barrier.
    arrive(item, call);
    return;
  }
  const llvm::Function* callee = call->getCalledFunction();
  if (callee)
  {
    std::string name = builtinName(callee->getName());
    if (name == "async_work_group_copy" || name == "async_work_group_strided_copy")
    {
      asyncCopy(item, call, name, result);
      return;
    }
  }
  int kind = fenceKind(instruction);
  if (kind < 0)
    return;
  Record record = base(FENCE, item);
  record.detail = (uint8_t)item->getOperand(call->getArgOperand(0)).getUInt();
  record.variant = (uint8_t)kind;
  record.site = site(instruction);
  Output::get().put(record);
}

// A work-item arrives at its group's barrier: which barrier, with which fence
// flags; wait_group_events first lists the events it waits for.
void Recorder::arrive(const WorkItem* item, const llvm::CallInst* call)
{
  const llvm::Function* callee = call->getCalledFunction();
  std::string name = callee ? builtinName(callee->getName()) : "";
  Record record = base(ARRIVE, item);
  record.site = site(call);
  record.count = volume(item->getWorkGroup()->getGroupSize());
  if (name == "barrier" || name == "work_group_barrier")
  {
    record.variant = BARRIER_FLAGS;
    record.detail = (uint8_t)item->getOperand(call->getArgOperand(0)).getUInt();
  }
  else if (name == "wait_group_events")
  {
    Record wait = base(WAIT_EVENTS, item);
    wait.site = record.site;
    wait.count = waitEvents(item, call);
    Output::get().put(wait);
    record.variant = BARRIER_WAIT;
    record.detail = LOCAL_MEM_FENCE | GLOBAL_MEM_FENCE;
  }
  else
  {
    record.variant = BARRIER_UNKNOWN;
  }
  Output::get().put(record);
}

// "copy ID DEST SRC DEST_SPACE SRC_SPACE ELEMENT_BYTES COUNT SRC_STRIDE DEST_STRIDE EVENT":
// the arguments of one work-item's async_work_group_copy, as Oclgrind reads them.
void Recorder::asyncCopy(const WorkItem* item, const llvm::CallInst* call,
                         const std::string& name, const TypedValue& result)
{
  unsigned arg = 0;
  const llvm::Value* destOp = call->getArgOperand(arg++);
  const llvm::Value* srcOp = call->getArgOperand(arg++);
  uint64_t num = item->getOperand(call->getArgOperand(arg++)).getUInt();
  uint64_t stride = 1;
  if (name == "async_work_group_strided_copy")
    stride = item->getOperand(call->getArgOperand(arg++)).getUInt();
  unsigned destSpace = destOp->getType()->getPointerAddressSpace();
  unsigned srcSpace = srcOp->getType()->getPointerAddressSpace();
  bool toLocal = destSpace == AddrSpaceLocal;
  uint32_t id = Output::get().nextCopy();
  Output::get().meta(
    "copy\t" + std::to_string(id) + "\t" +
    std::to_string(item->getOperand(destOp).getPointer()) + "\t" +
    std::to_string(item->getOperand(srcOp).getPointer()) + "\t" + std::to_string(destSpace) +
    "\t" + std::to_string(srcSpace) + "\t" +
    std::to_string(copyElementSize(builtinOverload(call->getCalledFunction()->getName()))) +
    "\t" + std::to_string(num) + "\t" + std::to_string(toLocal ? stride : 1) + "\t" +
    std::to_string(toLocal ? 1 : stride) + "\t" + std::to_string(result.getUInt()));
  Record record = base(COPY_ISSUE, item);
  record.site = site(call);
  record.count = id;
  Output::get().put(record);
}

// "wait ID EVENT,EVENT,...": the events a wait_group_events call waits for.
// The event list sits in the work-item's private memory; it is read directly,
// so the plugin does not see its own read as a load.
uint32_t Recorder::waitEvents(const WorkItem* item, const llvm::CallInst* call)
{
  uint64_t num = item->getOperand(call->getArgOperand(0)).getUInt();
  size_t address = item->getOperand(call->getArgOperand(1)).getPointer();
  const Memory* memory = item->getPrivateMemory();
  std::string events;
  for (uint64_t i = 0; i < num; i++, address += sizeof(size_t))
  {
    const Memory::Buffer* buffer = memory->getBuffer(address);
    if (!buffer || memory->extractOffset(address) + sizeof(size_t) > buffer->size)
      break;
    size_t event;
    memcpy(&event, memory->getPointer(address), sizeof event);
    events += (i ? "," : "") + std::to_string(event);
  }
  uint32_t id = Output::get().nextWait();
  Output::get().meta("wait\t" + std::to_string(id) + "\t" + events);
  return id;
}

// Kernel arguments passed by value (structs) are pointers to private memory
// that Oclgrind fills when it creates the work-item, without a store.
void Recorder::workItemBegin(const WorkItem* item)
{
  if (!m_invocation)
    return;
  const Kernel* kernel = m_invocation->getKernel();
  for (auto value = kernel->values_begin(); value != kernel->values_end(); value++)
  {
    const llvm::Type* type = value->first->getType();
    if (!type->isPointerTy() || type->getPointerAddressSpace() != AddrSpacePrivate)
      continue;
    Record record = base(ARG_INIT, item);
    record.space = AddrSpacePrivate;
    record.size = (uint32_t)(value->second.size * value->second.num);
    record.address = item->getOperand(value->first).getPointer();
    Output::get().put(record);
  }
}

// A fatal error stops the rest of the launch (Oclgrind abandons its work-groups)
// while the host program may still exit 0: the converter refuses the trace.
void Recorder::log(MessageType type, const char* message)
{
  static const std::string fatal = "OCLGRIND FATAL ERROR";
  if (type != ERROR || !m_invocation || std::string(message).compare(0, fatal.size(), fatal))
    return;
  Output::get().meta("fatal\t" + std::to_string(m_launch) + "\t" + oneLine(message));
  Output::get().flush();
}

void Recorder::workGroupBarrier(const WorkGroup* group, uint32_t flags)
{
  Record record = base(RELEASE, nullptr);
  record.group = groupIndex(group);
  record.detail = (uint8_t)flags;
  record.count = volume(group->getGroupSize());
  Output::get().put(record);
}

void Recorder::kernelBegin(const KernelInvocation* invocation)
{
  m_invocation = invocation;
  m_localsDeclared = false;
  m_siteCache.clear();
  m_fenceCache.clear();
  m_launch = Output::get().nextLaunch();
  const Size3 groups = invocation->getNumGroups(), local = invocation->getLocalSize();
  Output::get().meta("kernel\t" + std::to_string(m_launch) + "\t" +
                     invocation->getKernel()->getName() + "\t" +
                     std::to_string(volume(groups)) + "\t" + std::to_string(volume(local)));
  Record record = base(KERNEL_BEGIN, nullptr);
  record.count = m_launch;
  Output::get().put(record);
  declareArguments(invocation->getKernel());
}

void Recorder::kernelEnd(const KernelInvocation*)
{
  Record record = base(KERNEL_END, nullptr);
  record.count = m_launch;
  Output::get().put(record);
  Output::get().flush();
  m_invocation = nullptr;
}

void Recorder::workGroupBegin(const WorkGroup* group)
{
  // Every group places its local memory at the same addresses: declare once.
  if (!m_localsDeclared)
    declareLocals(group);
  m_localsDeclared = true;
}

// Global and constant buffer arguments, named after the kernel's parameters.
void Recorder::declareArguments(const Kernel* kernel)
{
  const llvm::Function* function = kernel->getFunction();
  const Memory* global = m_context->getGlobalMemory();
  for (auto value = kernel->values_begin(); value != kernel->values_end(); value++)
  {
    auto argument = llvm::dyn_cast<llvm::Argument>(value->first);
    if (!argument || argument->getParent() != function)
      continue;
    unsigned index = argument->getArgNo();
    unsigned qualifier = kernel->getArgumentAddressQualifier(index);
    if (qualifier != CL_KERNEL_ARG_ADDRESS_GLOBAL && qualifier != CL_KERNEL_ARG_ADDRESS_CONSTANT)
      continue;
    size_t address = value->second.getPointer();
    const Memory::Buffer* buffer = address ? global->getBuffer(address) : nullptr;
    if (!buffer)
      continue;
    size_t bytes = buffer->size - global->extractOffset(address);
    declare(kernel->getArgumentName(index).str(), "global", address, bytes,
            itemSize(kernel->getArgumentTypeName(index).str()));
  }
}

// Local memory: __local parameters and __local arrays declared in the kernel.
void Recorder::declareLocals(const WorkGroup* group)
{
  const Kernel* kernel = m_invocation->getKernel();
  for (auto value = kernel->values_begin(); value != kernel->values_end(); value++)
  {
    const llvm::Type* type = value->first->getType();
    if (!type->isPointerTy() || type->getPointerAddressSpace() != AddrSpaceLocal)
      continue;
    size_t address = group->getLocalMemoryAddress(value->first);
    if (auto argument = llvm::dyn_cast<llvm::Argument>(value->first))
    {
      unsigned index = argument->getArgNo();
      declare(kernel->getArgumentName(index).str(), "local", address, value->second.size,
              itemSize(kernel->getArgumentTypeName(index).str()));
    }
    else if (auto variable = llvm::dyn_cast<llvm::GlobalVariable>(value->first))
    {
      const llvm::Type* stored = variable->getValueType();
      const llvm::Type* element = stored;
      while (element->isArrayTy())
        element = element->getArrayElementType();
      declare(variable->getName().str(), "local", address, getTypeSize(stored),
              getTypeSize(element));
    }
  }
}

void Recorder::declare(const std::string& name, const char* space, size_t address, size_t bytes,
                       uint32_t itemsize)
{
  Output::get().meta("buffer\t" + std::to_string(m_launch) + "\t" + name + "\t" + space +
                     "\t" + std::to_string(address) + "\t" + std::to_string(bytes) + "\t" +
                     std::to_string(itemsize));
}

std::unordered_map<const Context*, Recorder*> recorders;

} // namespace

extern "C" void initializePlugins(Context* context)
{
  if (!Output::get().ok())
    return;
  Recorder* recorder = new Recorder(context);
  recorders[context] = recorder;
  context->registerPlugin(recorder);
}

extern "C" void releasePlugins(Context* context)
{
  auto found = recorders.find(context);
  if (found == recorders.end())
    return;
  context->unregisterPlugin(found->second);
  delete found->second;
  recorders.erase(found);
}
