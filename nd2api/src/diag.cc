// SPDX-License-Identifier: MIT
// IND2AdapterDiagnostics (our extension, ndspi.h): a read-only view of what an
// adapter's stack holds (queue pairs, connections, bound ports, memory
// objects, packet buffers) and of its connection manager's counters and
// per-connection facts (a REJ's reason) that ND2's own interfaces do not
// report, and of the port beneath the adapter (QueryPort: driver, kernel
// interface, queues, MTU, MAC, frame counters). A separate object (a COM
// tear-off) holding a reference on the adapter: Adapter::QueryInterface makes
// one per request.
#include <algorithm>
#include <cstring>
#include <optional>
#include <string>

#include "nd2api/src/nd2.h"
#include "stack/port/kernel_iface.h"
#include "stack/port/port.h"

namespace roce::nd2 {

namespace {

// Copies s into a char array, cut to fit, NUL-terminated (the rest zero).
template <size_t N>
void CopyName(char (&out)[N], const std::string& s) {
  std::memset(out, 0, N);
  std::memcpy(out, s.data(), std::min(s.size(), N - 1));
}

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

  // The port's facts are fixed once it is open (profile, name, MAC, queues) or read from
  // thread-safe sources (its counters, the kernel interface's getters): no engine lock, as
  // QueryAdapter reads the port's pool gauge.
  HRESULT STDMETHODCALLTYPE QueryPort(ND2_PORT_DIAGNOSTICS* info, ULONG* cb) override {
    if (!cb) return ND_INVALID_PARAMETER_2;
    if (!info || *cb < sizeof(ND2_PORT_DIAGNOSTICS)) {
      *cb = sizeof(ND2_PORT_DIAGNOSTICS);
      return ND_BUFFER_OVERFLOW;
    }
    if (info->InfoVersion != ND2_DIAGNOSTICS_VERSION_1) return ND_INVALID_PARAMETER_1;
    const port::Port& p = adapter_->eng().port();
    const port::KernelIface* k = p.kernel();
    ND2_PORT_DIAGNOSTICS d{};
    d.InfoVersion = ND2_DIAGNOSTICS_VERSION_1;
    CopyName(d.Driver, p.profile().driver);
    // The interface opened beneath the port, else the one the profile names (net_tap's tap).
    CopyName(d.Interface, k ? k->name() : port::KernelInterface(p.profile()));
    CopyName(d.Name, p.name());
    d.Identity = p.kernel_identity() ? ND2_PORT_IDENTITY_KERNEL : ND2_PORT_IDENTITY_OWN;
    if (k && k->af_xdp()) {
      const std::optional<bool> zc = k->zero_copy();
      d.XdpMode = !zc ? ND2_PORT_XDP_UNKNOWN : *zc ? ND2_PORT_XDP_ZERO_COPY : ND2_PORT_XDP_COPY;
    } else if (p.profile().driver == "net_af_xdp") {
      d.XdpMode = ND2_PORT_XDP_UNKNOWN;
    } else {
      d.XdpMode = ND2_PORT_XDP_NONE;
    }
    d.RxQueues = p.rx_queues();
    d.TxQueues = p.tx_queues();
    d.Mtu = p.mtu();
    d.InterfaceMtu = k ? k->link_mtu() : 0;
    std::memcpy(d.Mac, p.mac().b.data(), sizeof d.Mac);
    const port::PortStats s = p.Stats();
    d.RxPackets = s.rx_packets;
    d.TxPackets = s.tx_packets;
    d.RxDrops = s.dev_imissed + s.dev_rx_nombuf + s.rx_copy_nomem;
    d.TxDrops = s.tx_full + s.tx_oversize + s.tx_nomem;
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
