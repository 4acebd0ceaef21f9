// ScopedRange on the NVTX3 C API (header-only; a tool attaches through its injection library).
#include "harness/measure/nvtx.h"

#include <nvtx3/nvToolsExt.h>

namespace kvb {
namespace {

nvtxDomainHandle_t kvb_domain() {
  static const nvtxDomainHandle_t domain = nvtxDomainCreateA(kNvtxDomain);
  return domain;
}

}  // namespace

ScopedRange::ScopedRange(const std::string& name) {
  nvtxEventAttributes_t attributes{};
  attributes.version = NVTX_VERSION;
  attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attributes.messageType = NVTX_MESSAGE_TYPE_ASCII;
  attributes.message.ascii = name.c_str();
  nvtxDomainRangePushEx(kvb_domain(), &attributes);
}

ScopedRange::~ScopedRange() { nvtxDomainRangePop(kvb_domain()); }

}  // namespace kvb
