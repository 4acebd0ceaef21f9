// RangeProfiler: the CUPTI Host API + Range Profiler sequence in one owner object (misordered calls crash inside
// CUPTI, so nothing else calls it). Every params struct is zero-initialised with its *_STRUCT_SIZE and pPriv NULL.
#include "harness/measure/cupti_range_profiler.h"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <utility>

#include "harness/measure/l2_flush.h"

namespace kvb {
namespace {

/// A CUPTI params struct, zeroed, with structSize set and pPriv NULL.
template <typename Params>
Params make_params(size_t struct_size) {
  Params p{};
  p.structSize = struct_size;
  p.pPriv = nullptr;
  return p;
}
#define KVB_CUPTI_PARAMS(Type) make_params<Type>(Type##_STRUCT_SIZE)

const char* result_name(CUptiResult r) {
  switch (r) {
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES: return "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES";
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED: return "CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED";
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
      return "CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES";
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED: return "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED";
    case CUPTI_ERROR_HARDWARE_BUSY: return "CUPTI_ERROR_HARDWARE_BUSY";
    case CUPTI_ERROR_NOT_SUPPORTED: return "CUPTI_ERROR_NOT_SUPPORTED";
    default: return "CUPTI_ERROR";
  }
}

/// Status of a failed CUPTI call, with the call's name and CUPTI's message in `detail`.
ProfilerStatus cupti_failure(const char* call, CUptiResult r) {
  const std::string message = cupti_result_message(r);
  ProfilerStatus s = classify_cupti_result(r, message);
  s.detail = std::string(call) + ": " + result_name(r) + " (" + std::to_string(int(r)) + "): " + message;
  return s;
}

/// Status of a failed CUDA runtime call ("error: <cudaGetErrorString>").
ProfilerStatus cuda_failure(const char* call, cudaError_t e) {
  ProfilerStatus s;
  s.code = ProfilerStatus::Code::error;
  s.reason = std::string("error: ") + cudaGetErrorString(e);
  s.detail = std::string(call) + ": " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e);
  return s;
}

ProfilerStatus make_status(ProfilerStatus::Code code, const std::string& reason, const std::string& detail) {
  ProfilerStatus s;
  s.code = code;
  s.reason = reason;
  s.detail = detail;
  return s;
}

bool refused(CUpti_Profiler_Support_Level level) {
  return level == CUPTI_PROFILER_CONFIGURATION_UNSUPPORTED || level == CUPTI_PROFILER_CONFIGURATION_DISABLED;
}

}  // namespace

ProfilerStatus classify_cupti_result(CUptiResult result, const std::string& cupti_message) {
  using Code = ProfilerStatus::Code;
  switch (result) {
    case CUPTI_SUCCESS:
      return make_status(Code::ok, "ok", "");
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
      return make_status(Code::insufficient_privileges, "insufficient privileges", cupti_message);
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
      return make_status(Code::virtualised_device, "virtualised device", cupti_message);
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
    case CUPTI_ERROR_HARDWARE_BUSY:
    case CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED:
      return make_status(Code::another_profiler, "another profiler attached", cupti_message);
    case CUPTI_ERROR_NOT_SUPPORTED:
    case CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED:
    case CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED:
    case CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_SLI_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_INVALID_CHIP_NAME:
      return make_status(Code::unsupported_device, "unsupported device", cupti_message);
    case CUPTI_ERROR_INVALID_DEVICE:
      return make_status(Code::no_device, "no device", cupti_message);
    default: {
      const std::string message =
          cupti_message.empty() ? "CUPTI error " + std::to_string(static_cast<int>(result)) : cupti_message;
      return make_status(Code::error, "error: " + message, message);
    }
  }
}

std::string cupti_result_message(CUptiResult result) {
  const char* text = nullptr;
  if (cuptiGetResultString(result, &text) == CUPTI_SUCCESS && text && *text) return text;
  return "CUPTI error " + std::to_string(static_cast<int>(result));
}

struct RangeProfiler::Impl {
  RangeProfilerOptions options;
  std::vector<std::string> metric_names;  // read, write, time, extra...
  std::vector<const char*> metric_ptrs;
  bool cupti_initialised = false;
  CUpti_Profiler_Host_Object* host = nullptr;
  CUpti_RangeProfiler_Object* range_profiler = nullptr;
  CUcontext context = nullptr;
  std::string chip;
  std::vector<uint8_t> counter_availability;
  std::vector<uint8_t> config_image;
  std::vector<uint8_t> counter_data;
  size_t passes = 0;
  std::optional<L2Flusher> flusher;

  ~Impl() {
    if (range_profiler) {
      auto p = KVB_CUPTI_PARAMS(CUpti_RangeProfiler_Disable_Params);
      p.pRangeProfilerObject = range_profiler;
      cuptiRangeProfilerDisable(&p);
    }
    if (host) {
      auto p = KVB_CUPTI_PARAMS(CUpti_Profiler_Host_Deinitialize_Params);
      p.pHostObject = host;
      cuptiProfilerHostDeinitialize(&p);
    }
    if (cupti_initialised) {
      auto p = KVB_CUPTI_PARAMS(CUpti_Profiler_DeInitialize_Params);
      cuptiProfilerDeInitialize(&p);
    }
  }

  ProfilerStatus setup();
  ProfilerStatus reset_counter_data();
};

ProfilerStatus RangeProfiler::Impl::setup() {
  using Code = ProfilerStatus::Code;
  const int device = options.cuda_device;
  if (options.refuse_under_injected_tool) {
    const char* injection = std::getenv("CUDA_INJECTION64_PATH");
    if (injection && *injection)
      return make_status(Code::another_profiler, "another profiler attached",
                         std::string("CUDA_INJECTION64_PATH is set (") + injection + "): a CUDA tool is attached");
  }
  int count = 0;
  const cudaError_t count_error = cudaGetDeviceCount(&count);
  if (count_error != cudaSuccess) {
    cudaGetLastError();
    return make_status(Code::no_device, "no device",
                       std::string("cudaGetDeviceCount: ") + cudaGetErrorString(count_error));
  }
  if (device < 0 || device >= count)
    return make_status(Code::no_device, "no device",
                       "cuda_device " + std::to_string(device) + " not in [0, " + std::to_string(count) + ")");
  if (cudaError_t e = cudaSetDevice(device); e != cudaSuccess) return cuda_failure("cudaSetDevice", e);
  if (cudaError_t e = cudaFree(nullptr); e != cudaSuccess) return cuda_failure("cudaFree(0)", e);
  {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    const cudaError_t e = cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &fn, 12000, cudaEnableDefault, &found);
    if (e != cudaSuccess || !fn || found != cudaDriverEntryPointSuccess)
      return cuda_failure("cudaGetDriverEntryPointByVersion(cuCtxGetCurrent)", e == cudaSuccess ? cudaErrorUnknown : e);
    using CtxGetCurrent = CUresult (*)(CUcontext*);
    if (reinterpret_cast<CtxGetCurrent>(fn)(&context) != CUDA_SUCCESS || !context)
      return cuda_failure("cuCtxGetCurrent", cudaErrorInvalidResourceHandle);
  }

  {
    auto p = KVB_CUPTI_PARAMS(CUpti_Profiler_Initialize_Params);
    if (CUptiResult r = cuptiProfilerInitialize(&p); r != CUPTI_SUCCESS) return cupti_failure("cuptiProfilerInitialize", r);
    cupti_initialised = true;
  }
  {
    auto p = KVB_CUPTI_PARAMS(CUpti_Profiler_DeviceSupported_Params);
    p.cuDevice = device;
    p.api = CUPTI_PROFILER_RANGE_PROFILING;
    if (CUptiResult r = cuptiProfilerDeviceSupported(&p); r != CUPTI_SUCCESS)
      return cupti_failure("cuptiProfilerDeviceSupported", r);
    if (refused(p.vGpu))
      return make_status(Code::virtualised_device, "virtualised device",
                         "cuptiProfilerDeviceSupported: vGPU profiling is not enabled on this device");
    if (refused(p.isSupported)) {
      std::string why;
      if (refused(p.architecture)) why += " architecture";
      if (refused(p.sli)) why += " SLI";
      if (refused(p.confidentialCompute)) why += " confidential-computing";
      if (refused(p.cmp)) why += " CMP";
      if (refused(p.wsl)) why += " WSL";
      return make_status(Code::unsupported_device, "unsupported device",
                         "cuptiProfilerDeviceSupported: not supported:" + (why.empty() ? std::string(" unknown") : why));
    }
  }
  {
    auto p = KVB_CUPTI_PARAMS(CUpti_Device_GetChipName_Params);
    p.deviceIndex = static_cast<size_t>(device);
    if (CUptiResult r = cuptiDeviceGetChipName(&p); r != CUPTI_SUCCESS) return cupti_failure("cuptiDeviceGetChipName", r);
    chip = p.pChipName ? p.pChipName : "";
  }
  {
    auto p = KVB_CUPTI_PARAMS(CUpti_Profiler_GetCounterAvailability_Params);
    p.ctx = context;
    if (CUptiResult r = cuptiProfilerGetCounterAvailability(&p); r != CUPTI_SUCCESS)
      return cupti_failure("cuptiProfilerGetCounterAvailability(size)", r);
    counter_availability.assign(p.counterAvailabilityImageSize, 0);
    p.pCounterAvailabilityImage = counter_availability.data();
    if (CUptiResult r = cuptiProfilerGetCounterAvailability(&p); r != CUPTI_SUCCESS)
      return cupti_failure("cuptiProfilerGetCounterAvailability", r);
  }
  {
    auto p = KVB_CUPTI_PARAMS(CUpti_Profiler_Host_Initialize_Params);
    p.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
    p.pChipName = chip.c_str();
    p.pCounterAvailabilityImage = counter_availability.data();
    if (CUptiResult r = cuptiProfilerHostInitialize(&p); r != CUPTI_SUCCESS)
      return cupti_failure("cuptiProfilerHostInitialize", r);
    host = p.pHostObject;
  }
  {
    auto p = KVB_CUPTI_PARAMS(CUpti_Profiler_Host_ConfigAddMetrics_Params);
    p.pHostObject = host;
    p.ppMetricNames = metric_ptrs.data();
    p.numMetrics = metric_ptrs.size();
    if (CUptiResult r = cuptiProfilerHostConfigAddMetrics(&p); r != CUPTI_SUCCESS)
      return cupti_failure("cuptiProfilerHostConfigAddMetrics", r);
  }
  {
    auto size = KVB_CUPTI_PARAMS(CUpti_Profiler_Host_GetConfigImageSize_Params);
    size.pHostObject = host;
    if (CUptiResult r = cuptiProfilerHostGetConfigImageSize(&size); r != CUPTI_SUCCESS)
      return cupti_failure("cuptiProfilerHostGetConfigImageSize", r);
    config_image.assign(size.configImageSize, 0);
    auto image = KVB_CUPTI_PARAMS(CUpti_Profiler_Host_GetConfigImage_Params);
    image.pHostObject = host;
    image.configImageSize = config_image.size();
    image.pConfigImage = config_image.data();
    if (CUptiResult r = cuptiProfilerHostGetConfigImage(&image); r != CUPTI_SUCCESS)
      return cupti_failure("cuptiProfilerHostGetConfigImage", r);
    auto count_passes = KVB_CUPTI_PARAMS(CUpti_Profiler_Host_GetNumOfPasses_Params);
    count_passes.configImageSize = config_image.size();
    count_passes.pConfigImage = config_image.data();
    if (CUptiResult r = cuptiProfilerHostGetNumOfPasses(&count_passes); r != CUPTI_SUCCESS)
      return cupti_failure("cuptiProfilerHostGetNumOfPasses", r);
    passes = count_passes.numOfPasses;
  }
  {
    auto p = KVB_CUPTI_PARAMS(CUpti_RangeProfiler_Enable_Params);
    p.ctx = context;
    if (CUptiResult r = cuptiRangeProfilerEnable(&p); r != CUPTI_SUCCESS) return cupti_failure("cuptiRangeProfilerEnable", r);
    range_profiler = p.pRangeProfilerObject;
  }
  {
    // One user range per measurement; the image holds exactly that one (ranges beyond it are dropped silently).
    auto p = KVB_CUPTI_PARAMS(CUpti_RangeProfiler_GetCounterDataSize_Params);
    p.pRangeProfilerObject = range_profiler;
    p.pMetricNames = metric_ptrs.data();
    p.numMetrics = metric_ptrs.size();
    p.maxNumOfRanges = 1;
    p.maxNumRangeTreeNodes = 1;
    if (CUptiResult r = cuptiRangeProfilerGetCounterDataSize(&p); r != CUPTI_SUCCESS)
      return cupti_failure("cuptiRangeProfilerGetCounterDataSize", r);
    counter_data.assign(p.counterDataSize, 0);
  }
  if (ProfilerStatus s = reset_counter_data(); !s.ok()) return s;
  if (options.flush_l2) {
    try {
      flusher.emplace();
    } catch (const CudaError& e) {
      return make_status(Code::error, std::string("error: ") + cudaGetErrorString(e.code), e.what());
    }
  }
  return make_status(Code::ok, "ok", "");
}

ProfilerStatus RangeProfiler::Impl::reset_counter_data() {
  auto init = KVB_CUPTI_PARAMS(CUpti_RangeProfiler_CounterDataImage_Initialize_Params);
  init.pRangeProfilerObject = range_profiler;
  init.counterDataSize = counter_data.size();
  init.pCounterData = counter_data.data();
  if (CUptiResult r = cuptiRangeProfilerCounterDataImageInitialize(&init); r != CUPTI_SUCCESS)
    return cupti_failure("cuptiRangeProfilerCounterDataImageInitialize", r);
  auto config = KVB_CUPTI_PARAMS(CUpti_RangeProfiler_SetConfig_Params);
  config.pRangeProfilerObject = range_profiler;
  config.configSize = config_image.size();
  config.pConfig = config_image.data();
  config.counterDataImageSize = counter_data.size();
  config.pCounterDataImage = counter_data.data();
  config.range = CUPTI_UserRange;
  config.replayMode = CUPTI_UserReplay;
  config.maxRangesPerPass = 1;
  config.numNestingLevels = 1;
  config.minNestingLevel = 1;
  config.passIndex = 0;
  config.targetNestingLevel = 1;
  if (CUptiResult r = cuptiRangeProfilerSetConfig(&config); r != CUPTI_SUCCESS)
    return cupti_failure("cuptiRangeProfilerSetConfig", r);
  return make_status(ProfilerStatus::Code::ok, "ok", "");
}

RangeProfilerOrStatus RangeProfiler::create(const RangeProfilerOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  if (options.drain_writes && !options.flush_l2) impl->options.drain_writes = false;
  const ProfilerMetrics& m = options.metrics;
  impl->metric_names = {m.dram_read, m.dram_write, m.gpu_time};
  impl->metric_names.insert(impl->metric_names.end(), m.extra.begin(), m.extra.end());
  for (const std::string& name : impl->metric_names) impl->metric_ptrs.push_back(name.c_str());

  RangeProfilerOrStatus out;
  out.status = impl->setup();
  if (!out.status.ok()) return out;
  RangeProfiler profiler(std::move(impl));
  // The first session after cuptiRangeProfilerEnable sets CUPTI up on the device (about 150 ms) and leaves a few MiB
  // of its own writes that would be counted in the caller's first range; an empty measurement absorbs them and
  // checks the whole sequence once, so that a refusal (privileges, another profiler) shows up here.
  const RangeMeasurement warm_up = profiler.measure([] {});
  if (!warm_up.status.ok()) {
    out.status = warm_up.status;
    return out;
  }
  out.profiler.emplace(std::move(profiler));
  return out;
}

RangeMeasurement RangeProfiler::measure(const std::function<void()>& work, const std::function<void()>& before_pass) {
  using Code = ProfilerStatus::Code;
  RangeMeasurement out;
  if (!impl_) {
    out.status = make_status(Code::error, "error: moved-from RangeProfiler", "measure on a moved-from RangeProfiler");
    return out;
  }
  Impl& I = *impl_;
  if (cudaError_t e = cudaSetDevice(I.options.cuda_device); e != cudaSuccess) {
    out.status = cuda_failure("cudaSetDevice", e);
    return out;
  }
  if (ProfilerStatus s = I.reset_counter_data(); !s.ok()) {
    out.status = s;
    return out;
  }

  // Flush L2 outside the range; CUDA errors come back as a status.
  auto flush = [&](ProfilerStatus& status) {
    if (!I.flusher) return true;
    try {
      I.flusher->flush(nullptr);
    } catch (const CudaError& e) {
      status = make_status(Code::error, std::string("error: ") + cudaGetErrorString(e.code), e.what());
      return false;
    }
    if (cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess) {
      status = cuda_failure("cudaDeviceSynchronize after L2 flush", e);
      return false;
    }
    return true;
  };

  cudaEvent_t drain_start = nullptr, drain_stop = nullptr;
  const bool drain = I.options.drain_writes && I.flusher.has_value();
  if (drain) {
    if (cudaError_t e = cudaEventCreate(&drain_start); e != cudaSuccess) {
      out.status = cuda_failure("cudaEventCreate", e);
      return out;
    }
    if (cudaError_t e = cudaEventCreate(&drain_stop); e != cudaSuccess) {
      cudaEventDestroy(drain_start);
      out.status = cuda_failure("cudaEventCreate", e);
      return out;
    }
  }
  struct EventGuard {
    cudaEvent_t a, b;
    ~EventGuard() {
      if (a) cudaEventDestroy(a);
      if (b) cudaEventDestroy(b);
    }
  } event_guard{drain_start, drain_stop};

  const size_t max_passes = std::max<size_t>(I.passes, 1) * 2 + 2;
  double drain_ms_total = 0;
  bool all_submitted = false;
  ProfilerStatus status = make_status(Code::ok, "ok", "");
  while (!all_submitted) {
    if (out.passes >= max_passes) {
      out.status = make_status(Code::error, "error: CUPTI did not finish its replay passes",
                               "cuptiRangeProfilerStop: not all passes submitted after " + std::to_string(out.passes));
      return out;
    }
    if (before_pass) before_pass();
    if (!flush(status)) {
      out.status = status;
      return out;
    }
    auto start = KVB_CUPTI_PARAMS(CUpti_RangeProfiler_Start_Params);
    start.pRangeProfilerObject = I.range_profiler;
    if (CUptiResult r = cuptiRangeProfilerStart(&start); r != CUPTI_SUCCESS) {
      out.status = cupti_failure("cuptiRangeProfilerStart", r);
      return out;
    }
    auto stop = KVB_CUPTI_PARAMS(CUpti_RangeProfiler_Stop_Params);
    stop.pRangeProfilerObject = I.range_profiler;
    auto push = KVB_CUPTI_PARAMS(CUpti_RangeProfiler_PushRange_Params);
    push.pRangeProfilerObject = I.range_profiler;
    push.pRangeName = I.options.range_name.c_str();
    if (CUptiResult r = cuptiRangeProfilerPushRange(&push); r != CUPTI_SUCCESS) {
      out.status = cupti_failure("cuptiRangeProfilerPushRange", r);
      cuptiRangeProfilerStop(&stop);
      return out;
    }
    auto pop = KVB_CUPTI_PARAMS(CUpti_RangeProfiler_PopRange_Params);
    pop.pRangeProfilerObject = I.range_profiler;
    try {
      work();
    } catch (...) {
      cuptiRangeProfilerPopRange(&pop);
      cuptiRangeProfilerStop(&stop);
      throw;
    }
    if (cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess) status = cuda_failure("cudaDeviceSynchronize after work", e);
    if (status.ok() && drain) {
      try {
        KVB_CUDA_CHECK(cudaEventRecord(drain_start, nullptr));
        I.flusher->drain(nullptr);
        KVB_CUDA_CHECK(cudaEventRecord(drain_stop, nullptr));
        KVB_CUDA_CHECK(cudaDeviceSynchronize());
        float ms = 0;
        KVB_CUDA_CHECK(cudaEventElapsedTime(&ms, drain_start, drain_stop));
        drain_ms_total += ms;
      } catch (const CudaError& e) {
        status = make_status(Code::error, std::string("error: ") + cudaGetErrorString(e.code), e.what());
      }
    }
    const CUptiResult pop_result = cuptiRangeProfilerPopRange(&pop);
    const CUptiResult stop_result = cuptiRangeProfilerStop(&stop);
    ++out.passes;
    if (!status.ok()) {
      out.status = status;
      return out;
    }
    if (pop_result != CUPTI_SUCCESS) {
      out.status = cupti_failure("cuptiRangeProfilerPopRange", pop_result);
      return out;
    }
    if (stop_result != CUPTI_SUCCESS) {
      out.status = cupti_failure("cuptiRangeProfilerStop", stop_result);
      return out;
    }
    all_submitted = stop.isAllPassSubmitted != 0;
  }
  if (!flush(status)) {
    out.status = status;
    return out;
  }

  auto decode = KVB_CUPTI_PARAMS(CUpti_RangeProfiler_DecodeData_Params);
  decode.pRangeProfilerObject = I.range_profiler;
  if (CUptiResult r = cuptiRangeProfilerDecodeData(&decode); r != CUPTI_SUCCESS) {
    out.status = cupti_failure("cuptiRangeProfilerDecodeData", r);
    return out;
  }
  if (decode.numOfRangeDropped != 0) {
    out.status = make_status(Code::error, "error: CUPTI dropped ranges",
                             "cuptiRangeProfilerDecodeData: " + std::to_string(decode.numOfRangeDropped) + " dropped");
    return out;
  }
  auto info = KVB_CUPTI_PARAMS(CUpti_RangeProfiler_GetCounterDataInfo_Params);
  info.pCounterDataImage = I.counter_data.data();
  info.counterDataImageSize = I.counter_data.size();
  if (CUptiResult r = cuptiRangeProfilerGetCounterDataInfo(&info); r != CUPTI_SUCCESS) {
    out.status = cupti_failure("cuptiRangeProfilerGetCounterDataInfo", r);
    return out;
  }
  if (info.numTotalRanges != 1) {
    out.status = make_status(Code::error, "error: CUPTI decoded " + std::to_string(info.numTotalRanges) + " ranges, expected 1",
                             "cuptiRangeProfilerGetCounterDataInfo");
    return out;
  }
  std::vector<double> values(I.metric_ptrs.size(), 0.0);
  auto evaluate = KVB_CUPTI_PARAMS(CUpti_Profiler_Host_EvaluateToGpuValues_Params);
  evaluate.pHostObject = I.host;
  evaluate.pCounterDataImage = I.counter_data.data();
  evaluate.counterDataImageSize = I.counter_data.size();
  evaluate.rangeIndex = 0;
  evaluate.ppMetricNames = I.metric_ptrs.data();
  evaluate.numMetrics = I.metric_ptrs.size();
  evaluate.pMetricValues = values.data();
  if (CUptiResult r = cuptiProfilerHostEvaluateToGpuValues(&evaluate); r != CUPTI_SUCCESS) {
    out.status = cupti_failure("cuptiProfilerHostEvaluateToGpuValues", r);
    return out;
  }
  for (size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i])) {
      out.status = make_status(Code::error, "error: CUPTI returned a non-finite value for " + I.metric_names[i],
                               "cuptiProfilerHostEvaluateToGpuValues: " + I.metric_names[i] + " = " +
                                   std::to_string(values[i]));
      return out;
    }
  }
  const double passes = static_cast<double>(out.passes);
  const double drain_bytes = drain ? static_cast<double>(I.flusher->drain_bytes()) : 0.0;
  out.dram_read_bytes = std::max(0.0, values[0] - drain_bytes);
  out.dram_write_bytes = values[1];
  out.gpu_time_ns = std::max(0.0, values[2] - (drain ? drain_ms_total * 1e6 / passes : 0.0));
  out.extra_values.assign(values.begin() + 3, values.end());
  out.status = make_status(Code::ok, "ok", "");
  return out;
}

size_t RangeProfiler::passes() const { return impl_ ? impl_->passes : 0; }

const std::string& RangeProfiler::chip_name() const {
  static const std::string none;
  return impl_ ? impl_->chip : none;
}

const RangeProfilerOptions& RangeProfiler::options() const {
  static const RangeProfilerOptions defaults;
  return impl_ ? impl_->options : defaults;
}

RangeProfiler::RangeProfiler(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RangeProfiler::~RangeProfiler() = default;
RangeProfiler::RangeProfiler(RangeProfiler&&) noexcept = default;
RangeProfiler& RangeProfiler::operator=(RangeProfiler&&) noexcept = default;

}  // namespace kvb
