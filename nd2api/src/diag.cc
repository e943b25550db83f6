// IND2AdapterDiagnostics (our extension, ndspi.h): a read-only view of what an
// adapter's stack holds (queue pairs, connections, bound ports, memory
// objects, packet buffers) and of its connection manager's counters and
// per-connection facts (a REJ's reason) that ND2's own interfaces do not
// report. A separate object (a COM tear-off) holding a reference on the
// adapter: Adapter::QueryInterface makes one per request.
#include <cstring>

#include "nd2api/src/nd2.h"

namespace roce::nd2 {

namespace {

class AdapterDiagnostics final : public IND2AdapterDiagnostics {
 public:
  explicit AdapterDiagnostics(Adapter* a) : adapter_(a) { adapter_->AddRef(); }
  ~AdapterDiagnostics() { adapter_->Release(); }

  HRESULT STDMETHODCALLTYPE QueryInterface(REFIID riid, void** ppv) override {
    if (!ppv) return E_POINTER;
    if (riid == IID_IND2AdapterDiagnostics) {
      *ppv = static_cast<IND2AdapterDiagnostics*>(this);
      AddRef();
      return S_OK;
    }
    // The adapter's identity (IUnknown) and its other interfaces.
    return adapter_->QueryInterface(riid, ppv);
  }
  ND2_REFCOUNT_METHODS(AdapterDiagnostics)

  HRESULT STDMETHODCALLTYPE QueryAdapter(ND2_ADAPTER_DIAGNOSTICS* info, ULONG* cb) override {
    if (!cb) return ND_INVALID_PARAMETER_2;
    if (!info || *cb < sizeof(ND2_ADAPTER_DIAGNOSTICS)) {
      *cb = sizeof(ND2_ADAPTER_DIAGNOSTICS);
      return ND_BUFFER_OVERFLOW;
    }
    if (info->InfoVersion != ND2_DIAGNOSTICS_VERSION_1) return ND_INVALID_PARAMETER_1;
    ND2_ADAPTER_DIAGNOSTICS d{};
    d.InfoVersion = ND2_DIAGNOSTICS_VERSION_1;
    engine::Engine& eng = adapter_->eng();
    {
      roce::engine::EngineLock l(&eng.mu());
      d.QueuePairs = eng.rc().QpsInUse();
      d.QuarantinedQpns = eng.rc().QuarantinedQpns();
      d.Connections = eng.cm().Connections();
      d.BoundPorts = eng.cm().BoundPorts();
      d.MemoryRegions = eng.rc().memory().live_regions();
      d.MemoryWindows = eng.rc().memory().live_windows();
      const cm::CmCounters& c = eng.cm().counters;
      d.CmRequestsSent = c.tx_req;
      d.CmRequestsReceived = c.rx_req;
      d.CmRepliesSent = c.tx_rep;
      d.CmRepliesReceived = c.rx_rep;
      d.CmRejectsSent = c.tx_rej;
      d.CmRejectsReceived = c.rx_rej;
      d.CmDisconnectRequestsSent = c.tx_dreq;
      d.CmDisconnectRequestsReceived = c.rx_dreq;
      d.CmDisconnectRepliesSent = c.tx_drep;
      d.CmDisconnectRepliesReceived = c.rx_drep;
      d.CmRetransmits = c.retransmits;
      d.CmTimeouts = c.timeouts;
      d.CmCrossedDisconnects = c.crossed_dreqs;
    }
    d.PacketBuffersInUse = eng.port().Stats().pool_in_use;
    std::memcpy(info, &d, sizeof d);
    *cb = sizeof d;
    return ND_SUCCESS;
  }

  HRESULT STDMETHODCALLTYPE QueryConnector(IUnknown* cu, ND2_CONNECTOR_DIAGNOSTICS* info, ULONG* cb) override {
    if (!cu) return ND_INVALID_PARAMETER_1;
    if (!cb) return ND_INVALID_PARAMETER_3;
    IND2Connector* i = nullptr;
    if (cu->QueryInterface(IID_IND2Connector, reinterpret_cast<void**>(&i)) != S_OK || !i)
      return ND_INVALID_PARAMETER_1;
    auto* c = dynamic_cast<Connector*>(i);
    const bool ours = c && c->adapter() == adapter_;
    HRESULT h = ND_SUCCESS;
    if (!ours) {
      h = ND_INVALID_PARAMETER_1;
    } else if (!info || *cb < sizeof(ND2_CONNECTOR_DIAGNOSTICS)) {
      *cb = sizeof(ND2_CONNECTOR_DIAGNOSTICS);
      h = ND_BUFFER_OVERFLOW;
    } else if (info->InfoVersion != ND2_DIAGNOSTICS_VERSION_1) {
      h = ND_INVALID_PARAMETER_2;
    } else {
      engine::Engine& eng = adapter_->eng();
      roce::engine::EngineLock l(&eng.mu());
      const cm::ConnId id = c->conn_id();
      const cm::ConnInfo* ci = id == cm::kNoConn ? nullptr : eng.cm().Info(id);
      if (!ci) {
        h = ND_CONNECTION_INVALID;
      } else {
        ND2_CONNECTOR_DIAGNOSTICS d{};
        d.InfoVersion = ND2_DIAGNOSTICS_VERSION_1;
        d.RejectReason = ci->reject_reason;
        d.TimedOut = ci->timed_out ? 1 : 0;
        d.PeerDisconnected = ci->peer_disconnected ? 1 : 0;
        d.LocalQpn = ci->qpn;
        d.PeerQpn = ci->peer_qpn;
        d.LocalCommId = ci->local_comm_id;
        d.PeerCommId = ci->peer_comm_id;
        std::memcpy(info, &d, sizeof d);
        *cb = sizeof d;
      }
    }
    i->Release();
    return h;
  }

 private:
  RefCount ref_;
  Adapter* adapter_;
};

}  // namespace

HRESULT CreateAdapterDiagnostics(Adapter* a, void** ppv) {
  auto* d = new AdapterDiagnostics(a);
  *ppv = static_cast<IND2AdapterDiagnostics*>(d);
  return S_OK;
}

}  // namespace roce::nd2
